// AVX2 dot products of the 32-element block types with Q8_0/Q8_1 activations, one
// activation row at a time and several at once. A block is one register of 32 bytes:
// u8 x i8 products summed by maddubs/madd into eight int32, converted and scaled
// with one FMA per block.
#include "avx2_common.h"
#include "block_bits.h"
#include "kernel_table.h"

namespace arbor::quant {
namespace {
using namespace avx2;

// Per weight type: its block, its activation block, whether the unpacked quants are
// unsigned (u8 x i8 directly) or signed (sign trick), and whether the block has a
// minimum m (then the dot gains m * s with s = d_y * sum(q_y) from Q8_1).
struct Q4_0T {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static __m256i quants(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8));
    }
};
struct Q4_1T {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr bool kMin = true;
    static __m256i quants(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_0T {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static __m256i quants(const Block& b) {
        const __m256i q = _mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(load_qh(b.qh)));
        return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
    }
};
struct Q5_1T {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr bool kMin = true;
    static __m256i quants(const Block& b) {
        return _mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(load_qh(b.qh)));
    }
};
struct Q8_0T {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static __m256i quants(const Block& b) { return load256(b.qs); }
};

// Types with a minimum have unsigned quants, the others signed ones.
template <class T>
inline __m256 block_dot(__m256i qx, const typename T::Act& y) {
    const __m256i qy = load256(y.qs);
    return _mm256_cvtepi32_ps(T::kMin ? dot_u8_i8(qx, qy) : dot_i8_i8(qx, qy));
}

// Lane 0: d_x * d_y; lane 1 (types with a minimum): m_x * s_y.
template <class T>
inline __m128 block_scales(const typename T::Block& x, const typename T::Act& y) {
    if constexpr (T::kMin) return _mm_mul_ps(load_half_pair(&x.d), load_half_pair(&y.d));
    else return _mm_set_ss(half_to_float(x.d) * half_to_float(y.d));
}

// Two independent accumulator chains hide the FMA latency.
template <class T>
float vec_dot(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const typename T::Block*>(w);
    const auto* y = static_cast<const typename T::Act*>(a);
    const int64_t nb = n / 32;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m128 mins = _mm_setzero_ps();
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        const __m128 s0 = block_scales<T>(x[i], y[i]);
        const __m128 s1 = block_scales<T>(x[i + 1], y[i + 1]);
        acc0 = _mm256_fmadd_ps(_mm256_broadcastss_ps(s0), block_dot<T>(T::quants(x[i]), y[i]), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_broadcastss_ps(s1), block_dot<T>(T::quants(x[i + 1]), y[i + 1]), acc1);
        if constexpr (T::kMin) mins = _mm_add_ps(mins, _mm_add_ps(s0, s1));
    }
    for (; i < nb; ++i) {
        const __m128 s = block_scales<T>(x[i], y[i]);
        acc0 = _mm256_fmadd_ps(_mm256_broadcastss_ps(s), block_dot<T>(T::quants(x[i]), y[i]), acc0);
        if constexpr (T::kMin) mins = _mm_add_ps(mins, s);
    }
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    if constexpr (T::kMin) sum += _mm_cvtss_f32(_mm_movehdup_ps(mins));
    return sum;
}

// R activation rows (R <= 4) against one weight row: each weight block is unpacked
// once. The activation scales of the R rows are gathered into one register and
// converted together: lanes (2r, 2r+1) hold (d, s) of row r for Q8_1, lane r holds d
// of row r for Q8_0.
template <class T, int R>
void vec_dot_rows(int64_t nb, const typename T::Block* x, const char* acts, size_t stride,
                  float* out, int64_t out_stride) {
    const typename T::Act* y[R];
    for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const typename T::Act*>(acts + r * stride);
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    __m256 mins = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i qx = T::quants(x[i]);
        __m256 scales;
        if constexpr (T::kMin) {
            int32_t ds[4] = {};
            for (int r = 0; r < R; ++r) std::memcpy(&ds[r], &y[r][i].d, 4);
            const __m256 act = _mm256_cvtph_ps(_mm_setr_epi32(ds[0], ds[1], ds[2], ds[3]));
            const __m128 dm = load_half_pair(&x[i].d);
            const __m128 dm2 = _mm_movelh_ps(dm, dm);
            scales = _mm256_mul_ps(act, _mm256_set_m128(dm2, dm2));
            mins = _mm256_add_ps(mins, scales);
        } else {
            uint16_t d[8] = {};
            for (int r = 0; r < R; ++r) d[r] = y[r][i].d;
            const __m256 act = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d)));
            scales = _mm256_mul_ps(act, _mm256_set1_ps(half_to_float(x[i].d)));
        }
        for (int r = 0; r < R; ++r) {
            const __m256 s = _mm256_permutevar8x32_ps(scales, _mm256_set1_epi32(T::kMin ? 2 * r : r));
            acc[r] = _mm256_fmadd_ps(s, block_dot<T>(qx, y[r][i]), acc[r]);
        }
    }
    alignas(32) float m[8];
    _mm256_store_ps(m, mins);
    for (int r = 0; r < R; ++r) out[r * out_stride] = hsum(acc[r]) + (T::kMin ? m[2 * r + 1] : 0.0f);
}

template <class T>
void vec_dot_multi(int64_t n, const void* w, const void* acts, size_t stride, int n_act,
                   float* out, int64_t out_stride) {
    const auto* x = static_cast<const typename T::Block*>(w);
    const auto* a = static_cast<const char*>(acts);
    const int64_t nb = n / 32;
    int r = 0;
    for (; r + 4 <= n_act; r += 4)
        vec_dot_rows<T, 4>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride);
    switch (n_act - r) {
    case 3: vec_dot_rows<T, 3>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 2: vec_dot_rows<T, 2>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 1: out[r * out_stride] = vec_dot<T>(n, w, a + r * stride); break;
    default: break;
    }
}

} // namespace

VecDotFn avx2_vec_dot(DType weight) {
    switch (weight) {
    case DType::Q4_0: return vec_dot<Q4_0T>;
    case DType::Q4_1: return vec_dot<Q4_1T>;
    case DType::Q5_0: return vec_dot<Q5_0T>;
    case DType::Q5_1: return vec_dot<Q5_1T>;
    case DType::Q8_0: return vec_dot<Q8_0T>;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return avx2_vec_dot_kquant(weight);
    default: return avx2_vec_dot_float(weight);
    }
}

VecDotMultiFn avx2_vec_dot_multi(DType weight) {
    switch (weight) {
    case DType::Q4_0: return vec_dot_multi<Q4_0T>;
    case DType::Q4_1: return vec_dot_multi<Q4_1T>;
    case DType::Q5_0: return vec_dot_multi<Q5_0T>;
    case DType::Q5_1: return vec_dot_multi<Q5_1T>;
    case DType::Q8_0: return vec_dot_multi<Q8_0T>;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return avx2_vec_dot_multi_kquant(weight);
    default: return avx2_vec_dot_multi_float(weight);
    }
}

} // namespace arbor::quant
