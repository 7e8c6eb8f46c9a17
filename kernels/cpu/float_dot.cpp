// Scalar references of the fused float-activation dots, and dispatch.
#include "arbor/kernels/float_dot.h"

#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

namespace arbor {

void block_sums_32(const float* x, int64_t n, float* sums) {
    for (int64_t b = 0; b < n / 32; ++b) {
        float s = 0.0f;
        for (int i = 0; i < 32; ++i) s += x[b * 32 + i];
        sums[b] = s;
    }
}

namespace ref {

float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ4_0*>(w);
    double sum = 0.0;
    for (int64_t b = 0; b < n / QK4_0; ++b) {
        const float* xb = x + b * QK4_0;
        double t = 0.0;
        for (int i = 0; i < QK4_0 / 2; ++i)
            t += double((blocks[b].qs[i] & 0x0f) - 8) * xb[i] + double((blocks[b].qs[i] >> 4) - 8) * xb[i + QK4_0 / 2];
        sum += t * fp16_to_fp32(blocks[b].d);
    }
    return float(sum);
}

float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ4_1*>(w);
    double sum = 0.0;
    for (int64_t b = 0; b < n / QK4_1; ++b) {
        const float* xb = x + b * QK4_1;
        double t = 0.0, sx = 0.0;
        for (int i = 0; i < QK4_1 / 2; ++i) {
            t += double(blocks[b].qs[i] & 0x0f) * xb[i] + double(blocks[b].qs[i] >> 4) * xb[i + QK4_1 / 2];
            sx += double(xb[i]) + double(xb[i + QK4_1 / 2]);
        }
        sum += t * fp16_to_fp32(blocks[b].d) + sx * fp16_to_fp32(blocks[b].m);
    }
    return float(sum);
}

float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ8_0*>(w);
    double sum = 0.0;
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        double t = 0.0;
        for (int i = 0; i < QK8_0; ++i) t += double(blocks[b].qs[i]) * x[b * QK8_0 + i];
        sum += t * fp16_to_fp32(blocks[b].d);
    }
    return float(sum);
}

} // namespace ref

FloatDotFn float_dot_fn(DType type) {
    const bool simd = avx2::available();
    switch (type) {
    case DType::Q4_0: return simd ? avx2::dot_q4_0_f32 : ref::dot_q4_0_f32;
    case DType::Q4_1: return simd ? avx2::dot_q4_1_f32 : ref::dot_q4_1_f32;
    case DType::Q8_0: return simd ? avx2::dot_q8_0_f32 : ref::dot_q8_0_f32;
    default: return nullptr;
    }
}

} // namespace arbor
