// Dot products of one quantized weight row with float activations, unpacking each block
// in registers: the decode-time (few activation rows) path of the float matmul.
// x_block_sums[b] is the sum of x over block b (32 elements); the types with a minimum
// (Q4_1) need it.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>

namespace arbor {

using FloatDotFn = float (*)(int64_t n, const void* weight_row, const float* x, const float* x_block_sums);

// Best kernel for `type`, or nullptr when the type has no fused kernel (the caller then
// dequantizes rows and uses gemm_tile_f32).
FloatDotFn float_dot_fn(DType type);

// Sums of x over consecutive blocks of 32 (n a multiple of 32).
void block_sums_32(const float* x, int64_t n, float* sums);

namespace ref {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
} // namespace ref

namespace avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* x_block_sums);
} // namespace avx2

} // namespace arbor
