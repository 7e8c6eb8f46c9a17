// AVX2 dot products of the k-quants with Q8_K activations. Unsigned quants times
// activations go through maddubs; madd with the sub-block scales (as int16) then sums
// pairs into int32, so each super-block costs one conversion and one FMA. Minimum and
// offset terms use the activation's bsums (sums of 16) instead of the quants.
#include "avx2_common.h"
#include "block_bits.h"
#include "kernel_table.h"
#include "row_loops.h"

namespace arbor::quant {
namespace {
using namespace avx2;

// See dequant_scalar.cpp for the layouts.
template <bool kFifthBit, class Block>
float dot_q45_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    const __m256i low4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; ++i) {
        uint8_t sc[8], mn[8];
        unpack_k_scales(x[i].scales, sc, mn);
        // Each min covers two bsums: duplicate it per bsum, widen to int16.
        const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
        const __m256i summ = _mm256_madd_epi16(load256(y[i].bsums), mins);

        __m256i hbits = _mm256_setzero_si256();
        if constexpr (kFifthBit) hbits = load256(x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
        for (int g = 0; g < 4; ++g) {
            const __m256i q = load256(x[i].qs + 32 * g);
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if constexpr (kFifthBit) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i plo = _mm256_maddubs_epi16(lo, load256(y[i].qs + 64 * g));
            const __m256i phi = _mm256_maddubs_epi16(hi, load256(y[i].qs + 64 * g + 32));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * g])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * g + 1])));
        }
        const __m256 d = _mm256_set1_ps(half_to_float(x[i].d) * y[i].d);
        const __m256 dmin = _mm256_set1_ps(half_to_float(x[i].dmin) * y[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc);
        acc_min = _mm256_fmadd_ps(dmin, _mm256_cvtepi32_ps(summ), acc_min);
    }
    return hsum(acc) - hsum(acc_min);
}

// Q6_K quants are used unsigned (0..63); the -32 offset is applied once per
// super-block as -32 * sum_s scale_s * bsum_s.
float dot_q6_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
        const __m256i offset = _mm256_madd_epi16(load256(y[i].bsums), _mm256_cvtepi8_epi16(sc8));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            __m256i part[4];
            q6k_codes(x[i], h, part);
            for (int k = 0; k < 4; ++k) {
                // 32 elements = sub-blocks s and s + 1 of 16: scale s in the low 128
                // bits, s + 1 in the high ones.
                const int s = 8 * h + 2 * k;
                const __m128i pick = _mm_set_epi64x(0x0101010101010101LL * (s + 1), 0x0101010101010101LL * s);
                const __m256i scale = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
                const __m256i p = _mm256_maddubs_epi16(part[k], load256(y[i].qs + 128 * h + 32 * k));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale));
            }
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(offset, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(half_to_float(x[i].d) * y[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum(acc);
}

} // namespace

VecDotFn avx2_vec_dot_kquant(DType weight) {
    switch (weight) {
    case DType::Q4_K: return dot_q45_k<false, BlockQ4_K>;
    case DType::Q5_K: return dot_q45_k<true, BlockQ5_K>;
    case DType::Q6_K: return dot_q6_k;
    default: return nullptr;
    }
}

VecDotMultiFn avx2_vec_dot_multi_kquant(DType weight) {
    switch (weight) {
    case DType::Q4_K: return acts_by_single<dot_q45_k<false, BlockQ4_K>>;
    case DType::Q5_K: return acts_by_single<dot_q45_k<true, BlockQ5_K>>;
    case DType::Q6_K: return acts_by_single<dot_q6_k>;
    default: return nullptr;
    }
}

VecDotRowsFn avx2_vec_dot_rows_kquant(DType weight) {
    switch (weight) {
    case DType::Q4_K: return rows_by_single<dot_q45_k<false, BlockQ4_K>>;
    case DType::Q5_K: return rows_by_single<dot_q45_k<true, BlockQ5_K>>;
    case DType::Q6_K: return rows_by_single<dot_q6_k>;
    default: return nullptr;
    }
}

} // namespace arbor::quant
