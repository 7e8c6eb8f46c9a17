// Scalar references and the portable kernels.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"

#include <algorithm>
#include <cmath>

namespace arbor {

namespace ref {

void axpy_f32(float a, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

namespace {
inline float widen(float x) { return x; }
inline float widen(uint16_t x) { return fp16_to_fp32(x); }

// Each score accumulates in its own slot of out, one d after the other (the loop over d
// outside keeps the rows of keys in order).
template <class E>
void dot_columns(const float* q, int64_t n_q, const E* keys, int64_t ld, int64_t first, int64_t n, int64_t dim,
                 float* out, int64_t ldo) {
    for (int64_t h = 0; h < n_q; ++h) {
        float* o = out + h * ldo;
        std::fill(o, o + n, 0.0f);
        for (int64_t d = 0; d < dim; ++d) {
            const float qd = q[h * dim + d];
            const E* row = keys + d * ld + first;
            for (int64_t j = 0; j < n; ++j) o[j] += qd * widen(row[j]);
        }
    }
}
} // namespace

void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    dot_columns(q, n_q, keys, ld, first, n, dim, out, ldo);
}

void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    dot_columns(q, n_q, keys, ld, first, n, dim, out, ldo);
}

void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    for (int64_t h = 0; h < n_q; ++h)
        for (int64_t j = 0; j < n_rows; ++j) axpy_f32(weights[h * ldw + j], rows + j * dim, out + h * dim, dim);
}

void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    for (int64_t h = 0; h < n_q; ++h)
        for (int64_t j = 0; j < n_rows; ++j)
            for (int64_t i = 0; i < dim; ++i) out[h * dim + i] += weights[h * ldw + j] * fp16_to_fp32(rows[j * dim + i]);
}

// A Q8_0 element as the float it stands for (exact: see cpu_ops.h).
inline float q8_0_value(uint16_t scale, int8_t q) { return fp16_to_fp32(scale) * float(q); }

void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    for (int64_t h = 0; h < n_q; ++h) {
        float* o = out + h * ldo;
        std::fill(o, o + n, 0.0f);
        for (int64_t d = 0; d < dim; ++d) {
            const float qd = q[h * dim + d];
            const int8_t* row = keys + d * ld + first;
            const uint16_t* scale = scales + d / kQ8BlockSize * ld + first;
            for (int64_t j = 0; j < n; ++j) o[j] += qd * q8_0_value(scale[j], row[j]);
        }
    }
}

void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    const int64_t blocks = dim / kQ8BlockSize;
    for (int64_t h = 0; h < n_q; ++h)
        for (int64_t j = 0; j < n_rows; ++j)
            for (int64_t i = 0; i < dim; ++i)
                out[h * dim + i] +=
                    weights[h * ldw + j] * q8_0_value(scales[j * blocks + i / kQ8BlockSize], rows[j * dim + i]);
}

void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y) {
    const int64_t blocks = dim / kQ8BlockSize;
    for (int64_t j = 0; j < n_rows; ++j)
        for (int64_t i = 0; i < dim; ++i)
            y[j * dim + i] = q8_0_value(scales[j * blocks + i / kQ8BlockSize], rows[j * dim + i]);
}

void f16_from_f32(const float* x, uint16_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f32_from_f16(const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void scale_f32(float a, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

SoftmaxStats softmax(float* x, int64_t n) {
    if (n <= 0) return {-INFINITY, 0.0f};
    const float max = *std::max_element(x, x + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    const float inv = float(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
    return {max, float(sum)};
}

void silu_mul(float* x, const float* g, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i])) * g[i];
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
    const float scale = float(1.0 / std::sqrt(sum / double(n) + double(eps)));
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

} // namespace ref

// GGUF's Q8_0 blocks (d = amax / 127, stored as a half), with each element rounded
// against the half that is stored rather than the float d it was rounded from (GGUF's
// reference computes q = round(x / d)): the element read back, half(d) * q, is then the
// nearest to x that the block can hold. With d's rounding up to 2^-11 of d, the reference
// is off by up to 127 * 2^-11 = 0.06 of a step more. Where the half is below d an
// element can round to 128: it is clamped to 127.
void q8_0_from_f32(const float* x, int8_t* q, uint16_t* scales, int64_t n) {
    for (int64_t b = 0; b < n / kQ8BlockSize; ++b) {
        const float* xb = x + b * kQ8BlockSize;
        float amax = 0.0f;
        for (int64_t i = 0; i < kQ8BlockSize; ++i) amax = std::max(amax, std::fabs(xb[i]));
        scales[b] = fp32_to_fp16(amax / 127.0f);
        const float d = fp16_to_fp32(scales[b]);
        for (int64_t i = 0; i < kQ8BlockSize; ++i)
            q[b * kQ8BlockSize + i] = d == 0.0f ? 0 : int8_t(std::clamp(std::round(xb[i] / d), -127.0f, 127.0f));
    }
}

void rope_apply(float* x, const float* cos_sin, int64_t head_dim, bool neox) {
    const int64_t half = head_dim / 2;
    for (int64_t i = 0; i < half; ++i) {
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const int64_t i0 = neox ? i : 2 * i;
        const int64_t i1 = neox ? i + half : 2 * i + 1;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x0 * s + x1 * c;
    }
}

} // namespace arbor
