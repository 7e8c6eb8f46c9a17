// AVX2/FMA fused float-activation dots; compiled with -mavx2 -mfma -mf16c.
// Per 32-element block: t = sum(q_i * x_i) over the integer codes, then acc += d * t
// (+ m * sum(x) for Q4_1). Two accumulators hide the FMA latency.
#include "arbor/kernels/float_dot.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "arbor/kernels/quant_blocks.h"

#include <immintrin.h>

#include <cstring>

namespace arbor::avx2 {
namespace {

inline float hsum(__m256 v) {
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Codes of 32 elements as four vectors of 8 int8 in the low 64 bits of 128-bit lanes.
inline __m256 codes_dot(__m128i c0, __m128i c1, __m128i c2, __m128i c3, const float* x, bool is_signed) {
    auto cvt = [is_signed](__m128i c) {
        return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(c) : _mm256_cvtepu8_epi32(c));
    };
    __m256 t = _mm256_mul_ps(cvt(c0), _mm256_loadu_ps(x));
    t = _mm256_fmadd_ps(cvt(c1), _mm256_loadu_ps(x + 8), t);
    t = _mm256_fmadd_ps(cvt(c2), _mm256_loadu_ps(x + 16), t);
    return _mm256_fmadd_ps(cvt(c3), _mm256_loadu_ps(x + 24), t);
}

// The 16 packed bytes of a 4-bit block as the codes of elements 0..15 and 16..31.
inline void unpack_nibbles(const uint8_t* qs, __m128i& lo, __m128i& hi) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0f);
    lo = _mm_and_si128(q, mask);
    hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
}

} // namespace

float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ4_0*>(w);
    const __m128i eight = _mm_set1_epi8(8);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / QK4_0; ++b) {
        __m128i lo, hi;
        unpack_nibbles(blocks[b].qs, lo, hi);
        lo = _mm_sub_epi8(lo, eight);
        hi = _mm_sub_epi8(hi, eight);
        const __m256 t = codes_dot(lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8), x + b * QK4_0, true);
        acc[b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(half(blocks[b].d)), t, acc[b & 1]);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1]));
}

float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums) {
    const auto* blocks = static_cast<const BlockQ4_1*>(w);
    const __m256i low4 = _mm256_set1_epi32(0x0f);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 mins = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK4_1; ++b) {
        const BlockQ4_1& blk = blocks[b];
        // Bytes widened to 32 bits: the low nibble is element i, the high nibble (byte >> 4,
        // no mask needed) element i + 16.
        const __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs)));
        const __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + 8)));
        const float* xb = x + b * QK4_1;
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v0, low4)), _mm256_loadu_ps(xb));
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v1, low4)), _mm256_loadu_ps(xb + 8), t);
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4)), _mm256_loadu_ps(xb + 16), t);
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4)), _mm256_loadu_ps(xb + 24), t);
        // d and m are adjacent halves: one conversion gives both.
        int32_t dm_bits;
        std::memcpy(&dm_bits, &blk.d, sizeof dm_bits);
        const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(dm_bits));
        acc[b & 1] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), t, acc[b & 1]);
        mins = _mm_fmadd_ss(_mm_movehdup_ps(dm), _mm_load_ss(x_block_sums + b), mins);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1])) + _mm_cvtss_f32(mins);
}

float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ8_0*>(w);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    auto codes = [](const int8_t* q) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
    };
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        const int8_t* q = blocks[b].qs;
        const float* xb = x + b * QK8_0;
        __m256 t = _mm256_mul_ps(codes(q), _mm256_loadu_ps(xb));
        t = _mm256_fmadd_ps(codes(q + 8), _mm256_loadu_ps(xb + 8), t);
        t = _mm256_fmadd_ps(codes(q + 16), _mm256_loadu_ps(xb + 16), t);
        t = _mm256_fmadd_ps(codes(q + 24), _mm256_loadu_ps(xb + 24), t);
        acc[b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(half(blocks[b].d)), t, acc[b & 1]);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1]));
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_0_f32(n, w, x, s); }
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_1_f32(n, w, x, s); }
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q8_0_f32(n, w, x, s); }
} // namespace arbor::avx2

#endif
