// AVX2/FMA tile product; this file alone is compiled with -mavx2 -mfma.
#include "arbor/kernels/gemm_f32.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "quant/avx2_common.h"

#include <immintrin.h>

namespace arbor::avx2 {

using quant::avx2::hsum;
namespace {

// NW weight rows x NX activation rows, all of length k, with NW*NX accumulators.
template <int NW, int NX>
void micro(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t k, float* y, int64_t ldy) {
    __m256 acc[NW][NX];
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) acc[r][j] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= k; i += 8) {
        __m256 xv[NX];
        for (int j = 0; j < NX; ++j) xv[j] = _mm256_loadu_ps(x + j * ldx + i);
        for (int r = 0; r < NW; ++r) {
            const __m256 wv = _mm256_loadu_ps(w + r * ldw + i);
            for (int j = 0; j < NX; ++j) acc[r][j] = _mm256_fmadd_ps(wv, xv[j], acc[r][j]);
        }
    }
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) {
            float s = hsum(acc[r][j]);
            for (int64_t t = i; t < k; ++t) s += w[r * ldw + t] * x[j * ldx + t];
            y[j * ldy + r] = s;
        }
}

template <int NW>
void rows_of(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t n_x, int64_t k, float* y, int64_t ldy) {
    int64_t j = 0;
    for (; j + 3 <= n_x; j += 3) micro<NW, 3>(w, ldw, x + j * ldx, ldx, k, y + j * ldy, ldy);
    if (n_x - j == 2) micro<NW, 2>(w, ldw, x + j * ldx, ldx, k, y + j * ldy, ldy);
    else if (n_x - j == 1) micro<NW, 1>(w, ldw, x + j * ldx, ldx, k, y + j * ldy, ldy);
}

} // namespace

void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy) {
    int64_t r = 0;
    for (; r + 4 <= n_w; r += 4) rows_of<4>(w + r * ldw, ldw, x, ldx, n_x, k, y + r, ldy);
    switch (n_w - r) {
    case 3: rows_of<3>(w + r * ldw, ldw, x, ldx, n_x, k, y + r, ldy); break;
    case 2: rows_of<2>(w + r * ldw, ldw, x, ldx, n_x, k, y + r, ldy); break;
    case 1: rows_of<1>(w + r * ldw, ldw, x, ldx, n_x, k, y + r, ldy); break;
    default: break;
    }
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
void gemm_tile_f32(const float* w, int64_t ldw, int64_t n_w, const float* x, int64_t ldx, int64_t n_x, int64_t k,
                   float* y, int64_t ldy) {
    ref::gemm_tile_f32(w, ldw, n_w, x, ldx, n_x, k, y, ldy);
}
} // namespace arbor::avx2

#endif
