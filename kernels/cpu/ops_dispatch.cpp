#include "arbor/kernels/cpu_ops.h"

namespace arbor {

void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (avx512::available()) return avx512::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
    avx2::available() ? avx2::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo)
                      : ref::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
}

void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (avx512::available()) return avx512::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
    avx2::available() ? avx2::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo)
                      : ref::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
}

void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (avx512::available()) return avx512::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
    avx2::available() ? avx2::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out)
                      : ref::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
}

void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (avx512::available()) return avx512::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
    avx2::available() ? avx2::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out)
                      : ref::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
}

void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    if (avx512::available()) return avx512::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
    avx2::available() ? avx2::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo)
                      : ref::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
}

void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    if (avx512::available()) return avx512::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
    avx2::available() ? avx2::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out)
                      : ref::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
}

void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y) {
    avx2::available() ? avx2::f32_from_q8_0(rows, scales, n_rows, dim, y)
                      : ref::f32_from_q8_0(rows, scales, n_rows, dim, y);
}

void f16_from_f32(const float* x, uint16_t* y, int64_t n) {
    avx2::available() ? avx2::f16_from_f32(x, y, n) : ref::f16_from_f32(x, y, n);
}

void f32_from_f16(const uint16_t* x, float* y, int64_t n) {
    avx2::available() ? avx2::f32_from_f16(x, y, n) : ref::f32_from_f16(x, y, n);
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
    avx2::available() ? avx2::axpy_f32(a, x, y, n) : ref::axpy_f32(a, x, y, n);
}

SoftmaxStats softmax(float* x, int64_t n) { return avx2::available() ? avx2::softmax(x, n) : ref::softmax(x, n); }

void silu_mul(float* x, const float* g, int64_t n) {
    avx2::available() ? avx2::silu_mul(x, g, n) : ref::silu_mul(x, g, n);
}

void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    avx2::available() ? avx2::rms_norm(x, weight, y, n, eps) : ref::rms_norm(x, weight, y, n, eps);
}

} // namespace arbor
