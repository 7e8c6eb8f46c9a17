// AVX2/FMA variants; this file alone is compiled with -mavx2 -mfma.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/quant.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "quant/avx2_common.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace arbor::avx2 {

using quant::avx2::hsum;

// Same rule as the quantized kernels (AVX2, FMA and F16C; ARBOR_CPU_ISA=scalar turns it off).
bool available() {
    static const bool ok = isa_supported(Isa::Avx2);
    return ok;
}

float dot_f32(const float* a, const float* b, int64_t n) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    float sum = hsum(_mm256_add_ps(acc0, acc1));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

namespace {

// Lane k = the horizontal sum of a[k].
inline __m256 transpose_sums(const __m256 (&a)[8]) {
    const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

} // namespace

// Eight keys at a time: one accumulator each, summed together by one transpose instead
// of eight horizontal sums; the last keys one at a time.
void dot_rows_f32(const float* q, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    if (dim % 8 != 0) {
        ref::dot_rows_f32(q, rows, n_rows, dim, out);
        return;
    }
    int64_t j = 0;
    for (; j + 8 <= n_rows; j += 8) {
        __m256 acc[8];
        for (auto& a : acc) a = _mm256_setzero_ps();
        for (int64_t c = 0; c < dim; c += 8) {
            const __m256 qv = _mm256_loadu_ps(q + c);
            for (int k = 0; k < 8; ++k) acc[k] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(rows + (j + k) * dim + c), acc[k]);
        }
        _mm256_storeu_ps(out + j, transpose_sums(acc));
    }
    for (; j < n_rows; ++j) {
        const float* r = rows + j * dim;
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 16 <= dim; i += 16) {
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(r + i), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(r + i + 8), acc1);
        }
        if (i < dim) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(r + i), acc0);
        out[j] = hsum(_mm256_add_ps(acc0, acc1));
    }
}

// Output columns in chunks of 64 held in eight registers while the rows stream past.
void accumulate_rows_f32(const float* weights, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    if (dim % 8 != 0) {
        ref::accumulate_rows_f32(weights, rows, n_rows, dim, out);
        return;
    }
    for (int64_t c = 0; c < dim; c += 64) {
        const int lanes = int(std::min<int64_t>(64, dim - c) / 8);
        __m256 acc[8];
        for (int k = 0; k < lanes; ++k) acc[k] = _mm256_loadu_ps(out + c + 8 * k);
        for (int64_t j = 0; j < n_rows; ++j) {
            const __m256 w = _mm256_set1_ps(weights[j]);
            const float* r = rows + j * dim + c;
            for (int k = 0; k < lanes; ++k) acc[k] = _mm256_fmadd_ps(w, _mm256_loadu_ps(r + 8 * k), acc[k]);
        }
        for (int k = 0; k < lanes; ++k) _mm256_storeu_ps(out + c + 8 * k, acc[k]);
    }
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}

void scale_f32(float a, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= a;
}


namespace {

// exp on 8 lanes: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its degree-6 minimax
// polynomial (Cephes' expf coefficients), times 2^n built in the exponent bits. Inputs
// are clamped to the range where the result is a normal float.
inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

} // namespace

void softmax(float* x, int64_t n) {
    if (n <= 0) return;
    int64_t i = 0;
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    float max = hmax(vmax);
    for (; i < n; ++i) max = std::max(max, x[i]);
    const __m256 m = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum(vsum);
    for (; i < n; ++i) sum += x[i] = std::exp(x[i] - max);
    scale_f32(1.0f / sum, x, n);
}

} // namespace arbor::avx2

#else  // not an x86 build: the dispatcher never selects these

namespace arbor::avx2 {
bool available() { return false; }
float dot_f32(const float* a, const float* b, int64_t n) { return ref::dot_f32(a, b, n); }
void axpy_f32(float a, const float* x, float* y, int64_t n) { ref::axpy_f32(a, x, y, n); }
void scale_f32(float a, float* y, int64_t n) { ref::scale_f32(a, y, n); }
void softmax(float* x, int64_t n) { ref::softmax(x, n); }
void dot_rows_f32(const float* q, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    ref::dot_rows_f32(q, rows, n_rows, dim, out);
}
void accumulate_rows_f32(const float* weights, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    ref::accumulate_rows_f32(weights, rows, n_rows, dim, out);
}
} // namespace arbor::avx2

#endif
