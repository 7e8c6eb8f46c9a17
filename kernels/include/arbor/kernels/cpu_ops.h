// Float kernels of the CPU forward pass. The hot ones (dot, axpy) have a scalar
// reference in namespace ref and an AVX2/FMA variant chosen at run time.
// The attention row kernels read K or V rows stored as F32 or as F16 (IEEE half, the
// KV cache's default): an F16 row is converted exactly to float on load, and then
// computed in the same operation order as an F32 row holding those values.
#pragma once

#include <cstdint>

namespace arbor {

// What softmax divided by: the largest input and the sum of exp(x - max). Attention
// over parts of a row merges the parts' normalized results with them.
struct SoftmaxStats {
    float max, sum;
};

namespace ref {
float dot_f32(const float* a, const float* b, int64_t n);
// The attention of the n_q query heads that share a KV head, over one page:
// out[h * ldo + j] = dot(q + h * dim, rows + j * dim) for h < n_q, j < n_rows (scores);
void dot_rows_f32(const float* q, int64_t n_q, const float* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
// out + h * dim += sum_j weights[h * ldw + j] * (rows + j * dim), keys in order (values).
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void dot_rows_f16(const float* q, int64_t n_q, const uint16_t* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void f16_from_f32(const float* x, uint16_t* y, int64_t n);  // IEEE half, round to nearest even
void f32_from_f16(const uint16_t* x, float* y, int64_t n);  // exact
void axpy_f32(float a, const float* x, float* y, int64_t n);  // y += a * x
void scale_f32(float a, float* y, int64_t n);                 // y *= a
SoftmaxStats softmax(float* x, int64_t n);                    // in place, sums in double
void silu_mul(float* x, const float* g, int64_t n);           // x = silu(x) * g, libm exp
// y = x / rms(x) * weight: the squares summed in double, in order.
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
} // namespace ref

namespace avx2 {
bool available();
float dot_f32(const float* a, const float* b, int64_t n);
void dot_rows_f32(const float* q, int64_t n_q, const float* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void dot_rows_f16(const float* q, int64_t n_q, const uint16_t* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void f16_from_f32(const float* x, uint16_t* y, int64_t n);
void f32_from_f16(const uint16_t* x, float* y, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void scale_f32(float a, float* y, int64_t n);
// exp by a polynomial on 8 lanes (relative error ~2e-7), sums in float.
SoftmaxStats softmax(float* x, int64_t n);
void silu_mul(float* x, const float* g, int64_t n);  // the same exp
// The squares summed in double in four lanes (a different order: the scale may differ
// from the reference's in its last bit), the scaling in the reference's order.
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);
} // namespace avx2

// Dispatching entry points (AVX2 when the CPU has it, else the reference).
float dot_f32(const float* a, const float* b, int64_t n);
void dot_rows_f32(const float* q, int64_t n_q, const float* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void dot_rows_f16(const float* q, int64_t n_q, const uint16_t* rows, int64_t n_rows, int64_t dim, float* out,
                  int64_t ldo);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void f16_from_f32(const float* x, uint16_t* y, int64_t n);
void f32_from_f16(const uint16_t* x, float* y, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
void scale_f32(float a, float* y, int64_t n);
// In place, numerically stable (the maximum is subtracted first). n = 0 gives
// {-infinity, 0}.
SoftmaxStats softmax(float* x, int64_t n);
// In place: x = silu(x) * g = x / (1 + exp(-x)) * g.
void silu_mul(float* x, const float* g, int64_t n);

// y = x / rms(x) * weight, over n elements.
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps);

// Rotary position embedding of one head vector of head_dim elements with a
// precomputed table of cos/sin for its position (head_dim/2 pairs each).
// neox: rotate pairs (i, i + head_dim/2) instead of adjacent pairs (2i, 2i+1).
void rope_apply(float* x, const float* cos_sin, int64_t head_dim, bool neox);

} // namespace arbor
