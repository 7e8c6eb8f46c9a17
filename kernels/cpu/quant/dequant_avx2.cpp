// AVX2 dequantization. Each value is computed with the same operations in the same
// order as the scalar reference (separate multiply and add, no FMA), so both paths
// produce identical floats.
#include "avx2_common.h"
#include "block_bits.h"
#include "kernel_table.h"

namespace arbor::quant {
namespace {
using namespace avx2;

void dequant_f32(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void dequant_f16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) dst[i] = half_to_float(h[i]);
}

void dequant_bf16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; ++i) {
        const uint32_t bits = uint32_t(h[i]) << 16;
        std::memcpy(dst + i, &bits, sizeof bits);
    }
}

void dequant_q4_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < n / QK4_0; ++i, dst += QK4_0) {
        const __m256i q = _mm256_sub_epi8(unpack_nibbles(b[i].qs), _mm256_set1_epi8(8));
        store32<Sign::Signed>(q, _mm256_set1_ps(half_to_float(b[i].d)), __m256(), dst);
    }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < n / QK4_1; ++i, dst += QK4_1) {
        store32<Sign::Unsigned, true>(unpack_nibbles(b[i].qs), _mm256_set1_ps(half_to_float(b[i].d)),
                                      _mm256_set1_ps(half_to_float(b[i].m)), dst);
    }
}

void dequant_q5_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < n / QK5_0; ++i, dst += QK5_0) {
        __m256i q = _mm256_or_si256(unpack_nibbles(b[i].qs), fifth_bits(load_qh(b[i].qh)));
        q = _mm256_sub_epi8(q, _mm256_set1_epi8(16));
        store32<Sign::Signed>(q, _mm256_set1_ps(half_to_float(b[i].d)), __m256(), dst);
    }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < n / QK5_1; ++i, dst += QK5_1) {
        const __m256i q = _mm256_or_si256(unpack_nibbles(b[i].qs), fifth_bits(load_qh(b[i].qh)));
        store32<Sign::Unsigned, true>(q, _mm256_set1_ps(half_to_float(b[i].d)),
                                      _mm256_set1_ps(half_to_float(b[i].m)), dst);
    }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < n / QK8_0; ++i, dst += QK8_0)
        store32<Sign::Signed>(load256(b[i].qs), _mm256_set1_ps(half_to_float(b[i].d)), __m256(), dst);
}

// See dequant_scalar.cpp for the k-quant layouts.
template <bool kFifthBit, class Block>
void dequant_q45_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const Block*>(src);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = half_to_float(b[i].d);
        const float dmin = half_to_float(b[i].dmin);
        uint8_t sc[8], mn[8];
        unpack_k_scales(b[i].scales, sc, mn);
        __m256i hbits = _mm256_setzero_si256();
        if constexpr (kFifthBit) hbits = load256(b[i].qh);
        for (int g = 0; g < 4; ++g, dst += 64) {
            const __m256i q = load256(b[i].qs + 32 * g);
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if constexpr (kFifthBit) {
                const __m256i one = _mm256_set1_epi8(1);
                // bit 2g (lo) and 2g+1 (hi) of each qh byte, moved to bit 4
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            store32<Sign::Unsigned, false, true>(lo, _mm256_set1_ps(d * float(sc[2 * g])),
                                                 _mm256_set1_ps(dmin * float(mn[2 * g])), dst);
            store32<Sign::Unsigned, false, true>(hi, _mm256_set1_ps(d * float(sc[2 * g + 1])),
                                                 _mm256_set1_ps(dmin * float(mn[2 * g + 1])), dst + 32);
        }
    }
}

void dequant_q6_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    const __m256i bias = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = half_to_float(b[i].d);
        for (int h = 0; h < 2; ++h, dst += 128) {
            __m256i part[4];
            q6k_codes(b[i], h, part);
            const int8_t* sc = b[i].scales + 8 * h;
            for (int k = 0; k < 4; ++k) {
                const __m256i q = _mm256_sub_epi8(part[k], bias);
                // 32 elements span two scales: 16 each.
                const __m256 d0 = _mm256_set1_ps(d * float(sc[2 * k]));
                const __m256 d1 = _mm256_set1_ps(d * float(sc[2 * k + 1]));
                float* y = dst + 32 * k;
                _mm256_storeu_ps(y + 0, _mm256_mul_ps(d0, bytes_to_float<Sign::Signed, 0>(q)));
                _mm256_storeu_ps(y + 8, _mm256_mul_ps(d0, bytes_to_float<Sign::Signed, 1>(q)));
                _mm256_storeu_ps(y + 16, _mm256_mul_ps(d1, bytes_to_float<Sign::Signed, 2>(q)));
                _mm256_storeu_ps(y + 24, _mm256_mul_ps(d1, bytes_to_float<Sign::Signed, 3>(q)));
            }
        }
    }
}

} // namespace

DequantFn avx2_dequant(DType type) {
    switch (type) {
    case DType::F32: return dequant_f32;
    case DType::F16: return dequant_f16;
    case DType::BF16: return dequant_bf16;
    case DType::Q4_0: return dequant_q4_0;
    case DType::Q4_1: return dequant_q4_1;
    case DType::Q5_0: return dequant_q5_0;
    case DType::Q5_1: return dequant_q5_1;
    case DType::Q8_0: return dequant_q8_0;
    case DType::Q4_K: return dequant_q45_k<false, BlockQ4_K>;
    case DType::Q5_K: return dequant_q45_k<true, BlockQ5_K>;
    case DType::Q6_K: return dequant_q6_k;
    default: return avx2_dequant_low_bits(type);
    }
}

} // namespace arbor::quant
