// AVX2 dot products of the 32-element block types with Q8_0/Q8_1 activations: one
// row pair, one weight row against several activation rows (prefill), and several
// weight rows against one activation row (decode). A block is one register of 32
// bytes: u8 x i8 products summed by maddubs/madd into eight int32, converted and
// scaled with one FMA per block.
#include "avx2_common.h"
#include "block_bits.h"
#include "kernel_table.h"

namespace arbor::quant {
namespace {
using namespace avx2;

// How the unpacked weight quants enter maddubs (u8 x i8):
//   Unsigned:    as they are (types with a minimum, 0..31);
//   SmallSigned: |q| <= 16, so q can take the activation's sign: |y| x sign(q, y),
//                and |y| is shared by all weight rows dotted with the same y;
//   Signed:      Q8_0 may hold -128, which cannot be negated in int8: |q| x sign(y, q).
enum class Quants { Unsigned, SmallSigned, Signed };

// Per weight type: its block, its activation block, the quants (32 bytes in element
// order) and whether the block has a minimum m (then the dot gains m * s with
// s = d_y * sum(q_y) from Q8_1).
struct Q4_0T {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static constexpr Quants kQuants = Quants::SmallSigned;
    static __m256i quants(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8));
    }
};
struct Q4_1T {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr bool kMin = true;
    static constexpr Quants kQuants = Quants::Unsigned;
    static __m256i quants(const Block& b) { return unpack_nibbles(b.qs); }
};
struct Q5_0T {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static constexpr Quants kQuants = Quants::SmallSigned;
    static __m256i quants(const Block& b) {
        const __m256i q = _mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(load_qh(b.qh)));
        return _mm256_sub_epi8(q, _mm256_set1_epi8(16));
    }
};
struct Q5_1T {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr bool kMin = true;
    static constexpr Quants kQuants = Quants::Unsigned;
    static __m256i quants(const Block& b) {
        return _mm256_or_si256(unpack_nibbles(b.qs), fifth_bits(load_qh(b.qh)));
    }
};
struct Q8_0T {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr bool kMin = false;
    static constexpr Quants kQuants = Quants::Signed;
    static __m256i quants(const Block& b) { return load256(b.qs); }
};

// |y| for SmallSigned types (unused otherwise).
template <class T>
inline __m256i abs_act(__m256i qy) {
    return T::kQuants == Quants::SmallSigned ? _mm256_sign_epi8(qy, qy) : qy;
}

template <class T>
inline __m256 block_dot(__m256i qx, __m256i qy, __m256i abs_qy) {
    __m256i p;
    if constexpr (T::kQuants == Quants::Unsigned) p = dot_u8_i8(qx, qy);
    else if constexpr (T::kQuants == Quants::SmallSigned) p = dot_u8_i8(abs_qy, _mm256_sign_epi8(qx, qy));
    else p = dot_i8_i8(qx, qy);
    return _mm256_cvtepi32_ps(p);
}

template <class T>
inline __m256 block_dot(__m256i qx, const typename T::Act& y) {
    const __m256i qy = load256(y.qs);
    return block_dot<T>(qx, qy, abs_act<T>(qy));
}

// Per-block scale product of one weight row and one activation row: lane 0 holds
// d_x * d_y, lane 1 m_x * s_y (types with a minimum). `xs` is the weight's (d, m)
// or d, already converted.
template <class T>
inline __m128 scale_with(__m128 xs, const typename T::Act& y) {
    if constexpr (T::kMin) return _mm_mul_ps(xs, load_half_pair(&y.d));
    else return _mm_mul_ss(xs, _mm_set_ss(half_to_float(y.d)));
}

template <class T>
inline __m128 weight_scale(const typename T::Block& x) {
    if constexpr (T::kMin) return load_half_pair(&x.d);
    else return _mm_set_ss(half_to_float(x.d));
}

template <class T>
inline __m128 block_scales(const typename T::Block& x, const typename T::Act& y) {
    return scale_with<T>(weight_scale<T>(x), y);
}

// Two accumulator chains. Scales are converted per block: gathering four blocks'
// halves into one vcvtph2ps measured slower, the inserts cost more than they save.
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

template <int R>
inline void store_sums(const __m256 (&acc)[R], const __m128 (&mins)[R], bool with_mins, float* out,
                       int64_t out_stride) {
    for (int r = 0; r < R; ++r)
        out[r * out_stride] = hsum(acc[r]) + (with_mins ? _mm_cvtss_f32(_mm_movehdup_ps(mins[r])) : 0.0f);
}

// One weight row against R activation rows (prefill): each weight block is unpacked
// and its scales converted once for the R rows.
template <class T, int R>
void vec_dot_acts(int64_t nb, const typename T::Block* x, const char* acts, size_t stride,
                  float* out, int64_t out_stride) {
    const typename T::Act* y[R];
    for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const typename T::Act*>(acts + r * stride);
    __m256 acc[R];
    __m128 mins[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), mins[r] = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i qx = T::quants(x[i]);
        const __m128 xs = weight_scale<T>(x[i]);
        for (int r = 0; r < R; ++r) {
            const __m128 s = scale_with<T>(xs, y[r][i]);
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(s), block_dot<T>(qx, y[r][i]), acc[r]);
            if constexpr (T::kMin) mins[r] = _mm_add_ps(mins[r], s);
        }
    }
    store_sums<R>(acc, mins, T::kMin, out, out_stride);
}

// R weight rows against one activation row (decode): each activation block is loaded
// and its scales converted once for the R rows, and the call overhead is shared.
// Interleaved reads of R rows defeat the hardware prefetcher on large matrices, so
// the same position of the next group's rows (`next`, when there is one) is
// prefetched explicitly.
template <class T, int R>
void vec_dot_wrows(int64_t nb, const char* w, size_t stride, const typename T::Act* y, float* out,
                   int64_t out_stride, const char* next) {
    const typename T::Block* x[R];
    for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const typename T::Block*>(w + r * stride);
    __m256 acc[R];
    __m128 mins[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps(), mins[r] = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        if (next)
            for (int r = 0; r < R; ++r)
                _mm_prefetch(next + r * stride + i * int64_t(sizeof(typename T::Block)), _MM_HINT_T0);
        const __m256i qy = load256(y[i].qs);
        const __m256i abs_qy = abs_act<T>(qy);
        const __m128 ys = T::kMin ? load_half_pair(&y[i].d) : _mm_set_ss(half_to_float(y[i].d));
        for (int r = 0; r < R; ++r) {
            const __m128 s = _mm_mul_ps(weight_scale<T>(x[r][i]), ys);
            acc[r] = _mm256_fmadd_ps(_mm256_broadcastss_ps(s), block_dot<T>(T::quants(x[r][i]), qy, abs_qy), acc[r]);
            if constexpr (T::kMin) mins[r] = _mm_add_ps(mins[r], s);
        }
    }
    store_sums<R>(acc, mins, T::kMin, out, out_stride);
}

template <class T>
void vec_dot_multi(int64_t n, const void* w, const void* acts, size_t stride, int n_act,
                   float* out, int64_t out_stride) {
    const auto* x = static_cast<const typename T::Block*>(w);
    const auto* a = static_cast<const char*>(acts);
    const int64_t nb = n / 32;
    int r = 0;
    for (; r + 4 <= n_act; r += 4)
        vec_dot_acts<T, 4>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride);
    switch (n_act - r) {
    case 3: vec_dot_acts<T, 3>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 2: vec_dot_acts<T, 2>(nb, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 1: out[r * out_stride] = vec_dot<T>(n, w, a + r * stride); break;
    default: break;
    }
}

template <class T>
void vec_dot_rows(int64_t n, const void* w, size_t stride, int64_t n_rows, const void* act,
                  float* out, int64_t out_stride) {
    const auto* base = static_cast<const char*>(w);
    const auto* y = static_cast<const typename T::Act*>(act);
    const int64_t nb = n / 32;
    int64_t r = 0;
    for (; r + 4 <= n_rows; r += 4) {
        const char* next = r + 4 < n_rows ? base + (r + 4) * stride : nullptr;
        vec_dot_wrows<T, 4>(nb, base + r * stride, stride, y, out + r * out_stride, out_stride, next);
    }
    switch (n_rows - r) {
    case 3: vec_dot_wrows<T, 3>(nb, base + r * stride, stride, y, out + r * out_stride, out_stride, nullptr); break;
    case 2: vec_dot_wrows<T, 2>(nb, base + r * stride, stride, y, out + r * out_stride, out_stride, nullptr); break;
    case 1: out[r * out_stride] = vec_dot<T>(n, base + r * stride, act); break;
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

VecDotRowsFn avx2_vec_dot_rows(DType weight) {
    switch (weight) {
    case DType::Q4_0: return vec_dot_rows<Q4_0T>;
    case DType::Q4_1: return vec_dot_rows<Q4_1T>;
    case DType::Q5_0: return vec_dot_rows<Q5_0T>;
    case DType::Q5_1: return vec_dot_rows<Q5_1T>;
    case DType::Q8_0: return vec_dot_rows<Q8_0T>;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return avx2_vec_dot_rows_kquant(weight);
    default: return avx2_vec_dot_rows_float(weight);
    }
}

} // namespace arbor::quant
