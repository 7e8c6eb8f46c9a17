// Helpers for the translation units compiled with -mavx2 -mfma -mf16c. Everything
// here is static (see block_bits.h for why), and these units avoid fp16.h and other
// shared inline code for the same reason: half floats go through F16C instead.
#pragma once

#include "arbor/kernels/quant_blocks.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace arbor::quant::avx2 {

static inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

static inline uint16_t float_to_half(float f) {
    return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Two adjacent halves (d and m of Q4_1/Q5_1, d and s of Q8_1) as floats in lanes 0, 1.
static inline __m128 load_half_pair(const uint16_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// 16 packed bytes -> 32 nibbles: bytes 0-15 the low nibbles, 16-31 the high ones,
// which is element order for the 32-element block types.
static inline __m256i unpack_nibbles(const uint8_t* qs) {
    const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0f));
}

// Byte j = 0x10 where bit j of the 32-bit mask is set, else 0.
static inline __m256i fifth_bits(uint32_t qh) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int32_t(qh)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// Eight int32 sums of four u8 * i8 products each. Pair sums stay within int16 as long
// as u <= 128 and |s| <= 127, true for every caller.
static inline __m256i dot_u8_i8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Signed x signed via |x| and sign(x) * y; y must not hold -128.
static inline __m256i dot_i8_i8(__m256i x, __m256i y) {
    return dot_u8_i8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The 6-bit codes (0..63, not yet offset by -32) of half h (128 elements) of a Q6_K
// block, as four registers of 32 bytes: elements 32k .. 32k+31 of that half in part[k].
static inline void q6k_codes(const BlockQ6_K& b, int h, __m256i (&part)[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(3);
    const __m256i ql0 = load256(b.ql + 64 * h);
    const __m256i ql1 = load256(b.ql + 64 * h + 32);
    const __m256i qh = load256(b.qh + 32 * h);
    part[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4), _mm256_slli_epi16(_mm256_and_si256(qh, low2), 4));
    part[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), low2), 4));
    part[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), low2), 4));
    part[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                              _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), low2), 4));
}

enum class Sign { Signed, Unsigned };

// Widens bytes 8k..8k+7 of q to eight floats.
template <Sign S, int k>
inline __m256 bytes_to_float(__m256i q) {
    const __m128i half = k < 2 ? _mm256_castsi256_si128(q) : _mm256_extracti128_si256(q, 1);
    const __m128i part = (k % 2) ? _mm_srli_si128(half, 8) : half;
    const __m256i wide = S == Sign::Signed ? _mm256_cvtepi8_epi32(part) : _mm256_cvtepu8_epi32(part);
    return _mm256_cvtepi32_ps(wide);
}

// dst[0..32) = q * d (+ m when kMin; - m when kSubMin).
template <Sign S, bool kMin = false, bool kSubMin = false>
inline void store32(__m256i q, __m256 d, __m256 m, float* dst) {
    auto one = [&](__m256 v) {
        v = _mm256_mul_ps(v, d);
        if constexpr (kMin) v = _mm256_add_ps(v, m);
        if constexpr (kSubMin) v = _mm256_sub_ps(v, m);
        return v;
    };
    _mm256_storeu_ps(dst + 0, one(bytes_to_float<S, 0>(q)));
    _mm256_storeu_ps(dst + 8, one(bytes_to_float<S, 1>(q)));
    _mm256_storeu_ps(dst + 16, one(bytes_to_float<S, 2>(q)));
    _mm256_storeu_ps(dst + 24, one(bytes_to_float<S, 3>(q)));
}

} // namespace arbor::quant::avx2
