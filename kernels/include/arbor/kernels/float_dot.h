// Products of quantized weight rows (Q4_0, Q4_1, Q8_0) with float activations, computed
// per 32-element block as  d * sum(code_i * x_i)  (+ m * sum(x_i) for Q4_1), with the
// integer codes converted to float exactly.
//
// Two forms with bit-identical results, so that a sequence's logits do not depend on
// what else shares its batch:
// - float_dot_fn: one row against one activation row, unpacking blocks in registers
//   (decode steps);
// - unpack_blocks + gemm_blocks: rows unpacked once into codes/scales, then a
//   register-blocked product with many activation rows (prefill).
// Per (row, activation row) both perform the same float operations in the same order:
// for each block b, t = c[0:8]*x[0:8], then t += c[8k:8k+8]*x[8k:8k+8] for k = 1..3 (fused
// multiply-add, 8 lanes), acc[b % 2] += d_b * t; result = hsum(acc[0] + acc[1]) plus, for
// Q4_1, the scalar chain mins = fma(m_b, xsum_b, mins) over b in order.
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

// A weight row as float codes (n values), per-block scales d and minimums m (n / 32 each;
// m is zero for types without a minimum).
void unpack_blocks(DType type, const void* weight_row, int64_t n, float* codes, float* d, float* m);

// y[j * ldy + r] = row r (codes + r*ldc, d/m + r*ldb) . x_j  for r < n_w, j < n_x.
void gemm_blocks(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, int64_t n_w,
                 const float* x, const float* x_block_sums, int64_t ldx, int64_t n_x, int64_t n, float* y, int64_t ldy);

namespace ref {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
void gemm_blocks(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, int64_t n_w,
                 const float* x, const float* x_block_sums, int64_t ldx, int64_t n_x, int64_t n, float* y, int64_t ldy);
} // namespace ref

namespace avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
void gemm_blocks(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, int64_t n_w,
                 const float* x, const float* x_block_sums, int64_t ldx, int64_t n_x, int64_t n, float* y, int64_t ldy);
} // namespace avx2

} // namespace arbor
