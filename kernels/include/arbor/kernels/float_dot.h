// Products of weight rows of any type with float activation rows: the float-activation
// matmul's kernel.
//
// The operation order (the contract every path reproduces bit for bit, so a sequence's
// logits never depend on what else shares its batch, nor on the tile that computed them):
//   v = the weight row dequantized exactly as dequantize_row gives it;
//   two accumulators of 8 lanes, a0 and a1, start at zero; for each chunk c of 8
//   elements (c = 0 .. n/8 - 1) in order, lane l: a[c % 2][l] = fma(v[8c + l], x[8c + l], a[c % 2][l]);
//   s = a0 + a1 lane-wise, then summed as the AVX2 horizontal sum does: lanes l and l + 4,
//   then those pairs 0+2 and 1+3, then the two;
//   then the n % 8 trailing elements in order: s = fma(v[i], x[i], s).
// Dequantizing first costs one multiply-add per weight element, which a tile of several
// activation rows shares; the AVX2 kernels of Q4_0, Q4_1 and Q8_0 do it in registers
// (d * q is exact in float, so fma(d, q, m) equals dequantize_row's d * q + m), the
// other types through a buffer of dequantized rows.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <vector>

namespace arbor {

// y[j * ldy + r] = (row r of w, at w + r * row_stride) . (x + j * ldx)
// for r < n_w and j < n_x; every row has n elements. `buffer` holds dequantized rows
// for the types without in-register kernels (grown as needed).
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, std::vector<float>& buffer);

namespace ref {
// The contract in scalar code, one pair at a time.
float float_dot(DType type, int64_t n, const void* w_row, const float* x);
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, std::vector<float>& buffer);
} // namespace ref

namespace avx2 {
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, std::vector<float>& buffer);
} // namespace avx2

} // namespace arbor
