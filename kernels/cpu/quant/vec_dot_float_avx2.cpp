// AVX2 dot products of F32/F16/BF16 weight rows with F32 activations.
#include "avx2_common.h"
#include "kernel_table.h"
#include "row_loops.h"

namespace arbor::quant {
namespace {
using namespace avx2;

struct F32T {
    using Elem = float;
    static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
    static float load1(const float* p) { return *p; }
};
struct F16T {
    using Elem = uint16_t;
    static __m256 load8(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static float load1(const uint16_t* p) { return half_to_float(*p); }
};
struct BF16T {
    using Elem = uint16_t;
    static __m256 load8(const uint16_t* p) {
        const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    static float load1(const uint16_t* p) {
        const uint32_t bits = uint32_t(*p) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
};

template <class T>
float vec_dot(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const typename T::Elem*>(w);
    const auto* y = static_cast<const float*>(a);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; ++k)
            acc[k] = _mm256_fmadd_ps(T::load8(x + i + 8 * k), _mm256_loadu_ps(y + i + 8 * k), acc[k]);
    for (; i + 8 <= n; i += 8) acc[0] = _mm256_fmadd_ps(T::load8(x + i), _mm256_loadu_ps(y + i), acc[0]);
    float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; ++i) sum += T::load1(x + i) * y[i];
    return sum;
}

// R activation rows share each converted weight vector; two vectors per step give
// 2R independent FMA chains.
template <class T, int R>
void vec_dot_rows(int64_t n, const typename T::Elem* x, const char* acts, size_t stride,
                  float* out, int64_t out_stride) {
    const float* y[R];
    for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const float*>(acts + r * stride);
    __m256 acc0[R], acc1[R];
    for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 w0 = T::load8(x + i), w1 = T::load8(x + i + 8);
        for (int r = 0; r < R; ++r) {
            acc0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y[r] + i), acc0[r]);
            acc1[r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(y[r] + i + 8), acc1[r]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        const __m256 w0 = T::load8(x + i);
        for (int r = 0; r < R; ++r) acc0[r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(y[r] + i), acc0[r]);
    }
    for (int r = 0; r < R; ++r) {
        float sum = hsum(_mm256_add_ps(acc0[r], acc1[r]));
        for (int64_t j = i; j < n; ++j) sum += T::load1(x + j) * y[r][j];
        out[r * out_stride] = sum;
    }
}

template <class T>
void vec_dot_multi(int64_t n, const void* w, const void* acts, size_t stride, int n_act,
                   float* out, int64_t out_stride) {
    const auto* x = static_cast<const typename T::Elem*>(w);
    const auto* a = static_cast<const char*>(acts);
    int r = 0;
    for (; r + 4 <= n_act; r += 4)
        vec_dot_rows<T, 4>(n, x, a + r * stride, stride, out + r * out_stride, out_stride);
    switch (n_act - r) {
    case 3: vec_dot_rows<T, 3>(n, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 2: vec_dot_rows<T, 2>(n, x, a + r * stride, stride, out + r * out_stride, out_stride); break;
    case 1: out[r * out_stride] = vec_dot<T>(n, w, a + r * stride); break;
    default: break;
    }
}

} // namespace

VecDotFn avx2_vec_dot_float(DType weight) {
    switch (weight) {
    case DType::F32: return vec_dot<F32T>;
    case DType::F16: return vec_dot<F16T>;
    case DType::BF16: return vec_dot<BF16T>;
    default: return nullptr;
    }
}

VecDotMultiFn avx2_vec_dot_multi_float(DType weight) {
    switch (weight) {
    case DType::F32: return vec_dot_multi<F32T>;
    case DType::F16: return vec_dot_multi<F16T>;
    case DType::BF16: return vec_dot_multi<BF16T>;
    default: return nullptr;
    }
}

VecDotRowsFn avx2_vec_dot_rows_float(DType weight) {
    switch (weight) {
    case DType::F32: return rows_by_single<vec_dot<F32T>>;
    case DType::F16: return rows_by_single<vec_dot<F16T>>;
    case DType::BF16: return rows_by_single<vec_dot<BF16T>>;
    default: return nullptr;
    }
}

} // namespace arbor::quant
