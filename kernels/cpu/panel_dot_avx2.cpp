// AVX2/FMA panel products (compiled with -mavx2 -mfma -mf16c), following the contract in
// panel_weights.h; the tiles are in panel_tile_avx2.h.
#include "arbor/kernels/panel_weights.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "panel_bytes_tile.h"

namespace arbor::avx2 {

PanelBlockScale quantize_panel_block(const float* x, int16_t* codes, int32_t limit) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
    __m256 a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 a4 = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    a4 = _mm_max_ps(a4, _mm_movehl_ps(a4, a4));
    a4 = _mm_max_ss(a4, _mm_movehdup_ps(a4));
    const float d = _mm_cvtss_f32(a4) / float(limit);
    const __m256 inv = _mm256_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)
        q[i] = _mm256_cvtps_epi32(
            _mm256_round_ps(_mm256_mul_ps(v[i], inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // packs works within 128-bit lanes: restore element order with a qword permute.
    const __m256i lo = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[0], q[1]), 0xd8);
    const __m256i hi = _mm256_permute4x64_epi64(_mm256_packs_epi32(q[2], q[3]), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + 16), hi);
    // Sums of elements 0-15 and 16-31.
    auto sum16 = [](__m256i a, __m256i b) {
        const __m256i s8 = _mm256_add_epi32(a, b);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        return _mm_cvtsi128_si32(s4);
    };
    const int32_t h0 = sum16(q[0], q[1]), h1 = sum16(q[2], q[3]);
    return {d, d * float(h0 + h1), {d * float(h0), d * float(h1)}, {h0, h1}};
}

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    if (panel_simd::byte_panel_dot<panel_simd::MaddubsAdd>(w, p_begin, p_end, x, t0, n_x, y, ldy)) return;
    panel_simd::with_simd_layout(w.layout(), [&]<class T>() {
        panel_simd::panel_rows<T, panel_simd::MaddAdd>(w, p_begin, p_end, x, t0, n_x, y, ldy);
    });
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
PanelBlockScale quantize_panel_block(const float* x, int16_t* codes, int32_t limit) {
    return ref::quantize_panel_block(x, codes, limit);
}
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    ref::panel_dot(w, p_begin, p_end, x, t0, n_x, y, ldy);
}
} // namespace arbor::avx2

#endif
