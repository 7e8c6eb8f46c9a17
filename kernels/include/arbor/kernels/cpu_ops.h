// Float kernels of the CPU forward pass. The hot ones (attention, axpy) have a scalar
// reference in namespace ref and an AVX2/FMA variant chosen at run time.
// The attention kernels read keys or values stored as F32 or as F16 (IEEE half, the KV
// cache's default): an F16 element is converted exactly to float on load, and then
// computed in the same operation order as an F32 element holding that value.
// They also read Q8_0 (GGUF's blocks of 32 int8 with one half-float scale d, stored as
// separate arrays): an element d * q is exact in float (an 11-bit by 8-bit product), so a
// Q8_0 kernel computes what the F32 one does on the dequantized values, bit for bit.
#pragma once

#include <cstdint>

namespace arbor {

// What softmax divided by: the largest input and the sum of exp(x - max). Attention
// over parts of a row merges the parts' normalized results with them.
struct SoftmaxStats {
    float max, sum;
};

// Elements per Q8_0 scale; the Q8_0 kernels need dim to be a multiple of it.
inline constexpr int64_t kQ8BlockSize = 32;

namespace ref {
// The attention scores of the n_q query heads that share a KV head, over keys stored as
// columns (a KV page's keys transposed: element d of key j at keys[d * ld + j]), for the
// keys j in [first, first + n):
//   out[h * ldo + j - first] = sum over d = 0, 1, ... in order of q[h * dim + d] * key[d],
// one rounding chain per score (here a product then a sum, in AVX2 a fused multiply-add),
// so a score's bits do not depend on first, n, ld or the other heads.
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
// out + h * dim += sum_j weights[h * ldw + j] * (rows + j * dim), keys in order (values).
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
// Q8_0 keys as columns: element (d, j) is fp16(scales[d / 32 * ld + j]) * keys[d * ld + j].
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo);
// Q8_0 value rows: element i of row j is fp16(scales[j * dim / 32 + i / 32]) * rows[j * dim + i].
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out);
void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y);  // exact
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
// The column kernels read whole groups of eight columns (from first rounded down to a
// multiple of eight): ld must be a multiple of eight and first + n <= ld, else they
// compute as the reference does.
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo);
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out);
void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y);
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

// AVX-512 (F, BW, DQ, VL) versions of the attention kernels: the bits of AVX2's, sixteen
// columns or elements a register. The column kernels need ld to be a multiple of sixteen,
// the value kernels dim (Q8_0: of 32); otherwise they call AVX2's.
namespace avx512 {
bool available();
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo);
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out);
} // namespace avx512

// Dispatching entry points (the widest set the CPU has: AVX-512 for the attention
// kernels, AVX2, else the reference).
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo);
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out);
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out);
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo);
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out);
void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y);
void f16_from_f32(const float* x, uint16_t* y, int64_t n);
void f32_from_f16(const uint16_t* x, float* y, int64_t n);
// x's n elements (a multiple of 32) as Q8_0 blocks, quantized as GGUF's reference does
// (d = amax / 127, q = round(x / d)): n int8 to q, n / 32 half scales to scales.
void q8_0_from_f32(const float* x, int8_t* q, uint16_t* scales, int64_t n);
void axpy_f32(float a, const float* x, float* y, int64_t n);
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
