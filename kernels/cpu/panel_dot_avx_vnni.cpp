// AVX-VNNI panel products (compiled with AVX2's flags plus -mavxvnni): AVX2's tiles
// (panel_tile_avx2.h) with the VEX-encoded vpdpwssd in place of vpmaddwd plus vpaddd,
// for CPUs with AVX-VNNI but no AVX-512 (Intel's client cores since Alder Lake). The
// integer sums are exact either way, so the bits equal AVX2's and the reference's.
#include "arbor/kernels/panel_weights.h"

#if defined(__AVXVNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "panel_bytes_tile.h"

namespace arbor::avx_vnni {
namespace {

struct DpwssdVex {
    static __m256i dot(__m256i sums, __m256i codes, __m256i x) { return _mm256_dpwssd_avx_epi32(sums, codes, x); }
};
// With 8-bit codes (panel_bytes_tile.h).
struct DpbusdVex {
    static __m256i dot(__m256i sums, __m256i weights, __m256i x) { return _mm256_dpbusd_avx_epi32(sums, weights, x); }
};

} // namespace

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    if (panel_simd::byte_panel_dot<DpbusdVex>(w, p_begin, p_end, x, t0, n_x, y, ldy)) return;
    panel_simd::with_simd_layout(w.layout(), [&]<class T>() {
        panel_simd::panel_rows<T, DpwssdVex>(w, p_begin, p_end, x, t0, n_x, y, ldy);
    });
}

} // namespace arbor::avx_vnni

#else

// Built without these flags (a non-x86 target): AVX2's tiles (or the reference).
namespace arbor::avx_vnni {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    avx2::panel_dot(w, p_begin, p_end, x, t0, n_x, y, ldy);
}
} // namespace arbor::avx_vnni

#endif
