// Products of quantized weight rows (Q4_0, Q4_1, Q8_0) with float activations, computed
// per 32-element block as  d * sum(code_i * x_i)  (+ m * sum(x_i) for Q4_1), with the
// integer codes converted to float exactly, unpacking each block in registers.
//
// float_dot_fn (one activation row) and dot_multi_rows (several, sharing each unpacked block)
// give bit-identical results per (weight row, activation row), so a sequence's logits do
// not depend on what else shares its batch. The operation order, which the scalar
// references reproduce: for each block b, t = c[0:8]*x[0:8], then t += c[8k:8k+8]*x[8k:8k+8]
// for k = 1..3 (fused multiply-add, 8 lanes), acc[b % 2] += d_b * t; result =
// hsum(acc[0] + acc[1]) (halves, pairs, last two) plus, for Q4_1, the scalar chain
// mins = fma(m_b, xsum_b, mins) over b in order.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>

namespace arbor {

// x_block_sums[b] = sum of x over block b, as computed by block_sums_32.
using FloatDotFn = float (*)(int64_t n, const void* weight_row, const float* x, const float* x_block_sums);

// Kernel for `type`, or nullptr when the type has none (Q4_0, Q4_1, Q8_0 have).
FloatDotFn float_dot_fn(DType type);
bool has_block_kernels(DType type);

// Sums of x over consecutive blocks of 32 (n a multiple of 32), sequentially.
void block_sums_32(const float* x, int64_t n, float* sums);

// out[j * ldy + r] = (w + r * row_stride) . (x + j * ldx) for r < n_w, j < n_x; xs holds
// n / 32 block sums per activation row, rows one after another. For types without block
// kernels it dequantizes (reference path).
void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy);

namespace ref {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy);
} // namespace ref

namespace avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy);
} // namespace avx2

} // namespace arbor
