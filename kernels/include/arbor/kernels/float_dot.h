// Products of weight rows of any type with float activation rows: the float-activation
// matmul's kernel.
//
// The operation order (the contract every path reproduces bit for bit, so a sequence's
// logits never depend on what else shares its batch, nor on the tile that computed them):
//   v = the weight row dequantized exactly as dequantize_row gives it;
//   the row's whole units (a unit is one quantization block, or 8 elements for the plain
//   float types; float_dot_split gives the numbers) form two halves: the first
//   floor(units / 2) units and the rest;
//   two accumulators of 8 lanes, a0 and a1, start at zero; a0 takes the first half's
//   chunks of 8 elements in order, a1 the second half's, lane l:
//   a[l] = fma(v[8c + l], x[8c + l], a[l]);
//   s = a0 + a1 lane-wise, then summed as the AVX2 horizontal sum does: lanes l and l + 4,
//   then those pairs 0+2 and 1+3, then the two;
//   then the elements after the whole units (plain floats only) in order: s = fma(v[i], x[i], s).
// Why halves: a single activation row still has two independent chains per weight row,
// and a tile of many rows can sweep one half and then the other, each contiguous in
// memory, with one accumulator per pair (twelve of the 16 AVX2 registers for three weight
// rows by four activation rows).
// Dequantizing costs one multiply-add per weight element: for up to a few dozen
// activation rows the AVX2 kernels of Q4_0, Q4_1 and Q8_0 do it in registers, once per
// weight chunk for up to eight activation rows (d * q is exact in float, so fma(d, q, m)
// equals dequantize_row's d * q + m); for more rows, and for the other types, a group of
// rows is dequantized once into a buffer that all activation rows then share.
#pragma once

#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/dtype.h"

#include <cstdint>

namespace arbor {

// Where the contract's second half begins and where the whole units end, in elements.
struct FloatDotSplit {
    int64_t split, whole;
};
FloatDotSplit float_dot_split(DType type, int64_t n);

// y[j * ldy + r] = (row r of w, at w + r * row_stride) . (x + j * ldx)
// for r < n_w and j < n_x; every row has n elements. `buffer` holds dequantized rows
// (grown as needed) when the rows are not dequantized in registers.
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer);

namespace ref {
// The contract in scalar code, one pair at a time.
float float_dot(DType type, int64_t n, const void* w_row, const float* x);
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer);
} // namespace ref

namespace avx2 {
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer);
} // namespace avx2

} // namespace arbor
