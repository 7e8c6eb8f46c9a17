// AVX2/FMA variants; this file alone is compiled with -mavx2 -mfma.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/quant.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "quant/avx2_common.h"

#include <immintrin.h>

#include <algorithm>

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

void dot_rows_f32(const float* q, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    if (dim % 8 != 0) {
        ref::dot_rows_f32(q, rows, n_rows, dim, out);
        return;
    }
    for (int64_t j = 0; j < n_rows; ++j) {
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

} // namespace arbor::avx2

#else  // not an x86 build: the dispatcher never selects these

namespace arbor::avx2 {
bool available() { return false; }
float dot_f32(const float* a, const float* b, int64_t n) { return ref::dot_f32(a, b, n); }
void axpy_f32(float a, const float* x, float* y, int64_t n) { ref::axpy_f32(a, x, y, n); }
void scale_f32(float a, float* y, int64_t n) { ref::scale_f32(a, y, n); }
void dot_rows_f32(const float* q, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    ref::dot_rows_f32(q, rows, n_rows, dim, out);
}
void accumulate_rows_f32(const float* weights, const float* rows, int64_t n_rows, int64_t dim, float* out) {
    ref::accumulate_rows_f32(weights, rows, n_rows, dim, out);
}
} // namespace arbor::avx2

#endif
