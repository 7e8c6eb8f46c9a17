#include "arbor/kernels/gemm_f32.h"

#include "arbor/kernels/cpu_ops.h"

namespace arbor {

void ref::gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                        float* y, int64_t ldy) {
    for (int64_t j = 0; j < n_x; ++j)
        for (int64_t r = 0; r < n_w; ++r) y[j * ldy + r] = ref::dot_f32(w + r * ldw, x + j * ldx, k);
}

void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy) {
    if (avx2::available()) avx2::gemm_tile_f32(w, ldw, n_w, x, ldx, n_x, k, y, ldy);
    else ref::gemm_tile_f32(w, ldw, n_w, x, ldx, n_x, k, y, ldy);
}

} // namespace arbor
