// Float tile products used by the float-activation matmul: a few weight rows, already
// dequantized into a small buffer, against a run of activation rows.
//   y[j * ldy + r] = sum_i w[r * ldw + i] * x[j * ldx + i]   for r < n_w, j < n_x
#pragma once

#include <cstdint>

namespace arbor {

namespace ref {
void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy);
} // namespace ref

namespace avx2 {
// Register-blocked: 4 weight rows x 3 activation rows per inner loop.
void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy);
} // namespace avx2

void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy);

} // namespace arbor
