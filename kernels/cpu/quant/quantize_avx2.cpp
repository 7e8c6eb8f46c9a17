// AVX2 activation quantizers. Scales come from the same scalar expressions as the
// reference and each element goes through the same multiply and the same rounding
// rule (emulated exactly), so the blocks are byte-identical to quantize_scalar.cpp.
#include "avx2_common.h"
#include "kernel_table.h"

namespace arbor::quant {
namespace {
using namespace avx2;

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// roundf: halves away from zero. x - trunc(x) is exact, so comparing its magnitude
// with 0.5 decides the rounding exactly.
inline __m256 round_half_away(__m256 x) {
    const __m256 t = _mm256_round_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 away = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(x, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
    return _mm256_add_ps(t, _mm256_and_ps(away, one));
}

// Four vectors of eight int32 in [-128, 127] -> 32 int8 in element order.
inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);  // dwords: a0 b0 c0 d0 a1 b1 c1 d1
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void quant_f32(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

// Shared by Q8_0 and Q8_1: returns d and writes qs; *sum gets the sum of qs.
inline float quant_block32(const float* x, int8_t* qs, int32_t* sum) {
    const __m256 v[4] = {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8), _mm256_loadu_ps(x + 16),
                         _mm256_loadu_ps(x + 24)};
    const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])),
                                   _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3])));
    const float d = hmax(m) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], id)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    return d;
}

void quant_q8_0(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    int32_t sum;
    for (int64_t i = 0; i < n / QK8_0; ++i, src += QK8_0)
        y[i].d = float_to_half(quant_block32(src, y[i].qs, &sum));
}

void quant_q8_1(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / QK8_1; ++i, src += QK8_1) {
        int32_t sum;
        const float d = quant_block32(src, y[i].qs, &sum);
        y[i].d = float_to_half(d);
        y[i].s = float_to_half(float(sum) * d);
    }
}

void quant_q8_k(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
        __m256 m = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(src + k)));
        const float amax = hmax(m);
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        // The reference takes the sign of the first element of largest magnitude.
        const __m256 target = _mm256_set1_ps(amax);
        float max = 0.0f;
        for (int k = 0; k < QK_K; k += 8) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(src + k)), target, _CMP_EQ_OQ));
            if (hit) {
                max = src[k + __builtin_ctz(unsigned(hit))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127);
        for (int c = 0; c < QK_K / 32; ++c) {
            __m256i q[4];
            for (int k = 0; k < 4; ++k) {
                const __m256 r = _mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(src + 32 * c + 8 * k)),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q[k] = _mm256_min_epi32(_mm256_cvtps_epi32(r), top);
            }
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs + 32 * c), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
            y[i].bsums[2 * c] = int16_t(hsum_i32(_mm256_add_epi32(q[0], q[1])));
            y[i].bsums[2 * c + 1] = int16_t(hsum_i32(_mm256_add_epi32(q[2], q[3])));
        }
        y[i].d = 1.0f / iscale;
    }
}

} // namespace

QuantFn avx2_quant(DType act_type) {
    switch (act_type) {
    case DType::F32: return quant_f32;
    case DType::Q8_0: return quant_q8_0;
    case DType::Q8_1: return quant_q8_1;
    case DType::Q8_K: return quant_q8_k;
    default: return nullptr;
    }
}

} // namespace arbor::quant
