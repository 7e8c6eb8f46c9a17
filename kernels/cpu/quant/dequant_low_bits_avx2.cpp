// AVX2 dequantization of Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4: the scalar reference's
// operations in the same order (no FMA), so both give identical floats. The table types
// look their codes up sixteen at a time with pshufb.
#include "avx2_common.h"
#include "block_bits.h"
#include "kernel_table.h"

namespace arbor::quant {
namespace {
using namespace avx2;

// Bytes 16p .. 16p + 15 of q (p = 0, 1) as sixteen floats v, stored as v * d (- m).
template <Sign S, int P, bool kSubMin>
inline void store16(__m256i q, float d, float m, float* dst) {
    const __m256 vd = _mm256_set1_ps(d), vm = _mm256_set1_ps(m);
    auto one = [&](__m256 v) {
        v = _mm256_mul_ps(v, vd);
        return kSubMin ? _mm256_sub_ps(v, vm) : v;
    };
    _mm256_storeu_ps(dst, one(bytes_to_float<S, 2 * P>(q)));
    _mm256_storeu_ps(dst + 8, one(bytes_to_float<S, 2 * P + 1>(q)));
}

// Elements 128h + 32j .. + 31 of a Q2_K/Q3_K block: the two low bits, at bit 2j of
// the 32 bytes of qs from 32h.
inline __m256i two_bits(const uint8_t* qs, int h, int j) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * h));
    return _mm256_and_si256(_mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * j)), _mm256_set1_epi8(3));
}

void dequant_q2_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i, dst += QK_K) {
        const float d = half_to_float(b[i].d), dmin = half_to_float(b[i].dmin);
        for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 4; ++j) {
                const __m256i q = two_bits(b[i].qs, h, j);
                const int s = 8 * h + 2 * j;  // the sub-blocks of the two halves of q
                const uint8_t s0 = b[i].scales[s], s1 = b[i].scales[s + 1];
                float* y = dst + 16 * s;
                store16<Sign::Unsigned, 0, true>(q, d * float(s0 & 0x0f), dmin * float(s0 >> 4), y);
                store16<Sign::Unsigned, 1, true>(q, d * float(s1 & 0x0f), dmin * float(s1 >> 4), y + 16);
            }
    }
}

void dequant_q3_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    const __m256i one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < n / QK_K; ++i, dst += QK_K) {
        const float d = half_to_float(b[i].d);
        int8_t sc[16];
        unpack_q3_k_scales(b[i].scales, sc);
        const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].hmask));
        for (int h = 0; h < 2; ++h)
            for (int j = 0; j < 4; ++j) {
                // Four less where the third bit (bit 4h + j of hmask[l]) is clear.
                const __m256i high = _mm256_and_si256(_mm256_srl_epi16(hm, _mm_cvtsi32_si128(4 * h + j)), one);
                const __m256i less = _mm256_slli_epi16(_mm256_xor_si256(high, one), 2);
                const __m256i q = _mm256_sub_epi8(two_bits(b[i].qs, h, j), less);
                const int s = 8 * h + 2 * j;
                float* y = dst + 16 * s;
                store16<Sign::Signed, 0, false>(q, d * float(sc[s]), 0.0f, y);
                store16<Sign::Signed, 1, false>(q, d * float(sc[s + 1]), 0.0f, y + 16);
            }
    }
}

// 32 elements of a table type from 16 bytes of codes (element order: low nibbles, then
// high), each the table's value times d.
inline void table32(const int8_t (&table)[16], const uint8_t* qs, float d, float* dst) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
    const __m256i v = _mm256_shuffle_epi8(t, unpack_nibbles(qs));
    store32<Sign::Signed>(v, _mm256_set1_ps(d), _mm256_setzero_ps(), dst);
}

void dequant_iq4_nl(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < n / QK4_NL; ++i, dst += QK4_NL) table32(kIq4NlValues, b[i].qs, half_to_float(b[i].d), dst);
}

void dequant_iq4_xs(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = half_to_float(b[i].d);
        for (int s = 0; s < 8; ++s, dst += 32) table32(kIq4NlValues, b[i].qs + 16 * s, d * float(iq4_xs_scale(b[i], s)), dst);
    }
}

void dequant_mxfp4(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockMXFP4*>(src);
    for (int64_t i = 0; i < n / QK_MXFP4; ++i, dst += QK_MXFP4) table32(kMxfp4Values, b[i].qs, e8m0_half(b[i].e), dst);
}

} // namespace

DequantFn avx2_dequant_low_bits(DType type) {
    switch (type) {
    case DType::Q2_K: return dequant_q2_k;
    case DType::Q3_K: return dequant_q3_k;
    case DType::IQ4_NL: return dequant_iq4_nl;
    case DType::IQ4_XS: return dequant_iq4_xs;
    case DType::MXFP4: return dequant_mxfp4;
    default: return nullptr;
    }
}

} // namespace arbor::quant
