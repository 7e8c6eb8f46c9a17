// Scalar reference activation quantizers. They follow ggml's reference quantizers
// step for step (same scale formula, same rounding), so the blocks are identical:
//   Q8_0/Q8_1: d = amax / 127, q = roundf(x * (1 / d)) (halves away from zero)
//   Q8_K:      iscale = -127 / x[argmax |x|], q = min(127, rint(iscale * x))
//              (halves to even), d = 1 / iscale.
#include "kernel_table.h"

#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

#include <cmath>
#include <cstring>

namespace arbor::quant {
namespace {

void quant_f32(const float* src, void* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

float block_amax(const float* x, int count) {
    float amax = 0.0f;
    for (int j = 0; j < count; ++j) {
        const float a = std::fabs(x[j]);
        amax = a > amax ? a : amax;
    }
    return amax;
}

void quant_q8_0(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / QK8_0; ++i, src += QK8_0) {
        const float d = block_amax(src, QK8_0) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = int8_t(std::round(src[j] * id));
    }
}

void quant_q8_1(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / QK8_1; ++i, src += QK8_1) {
        const float d = block_amax(src, QK8_1) / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; ++j) {
            y[i].qs[j] = int8_t(std::round(src[j] * id));
            sum += y[i].qs[j];
        }
        y[i].s = fp32_to_fp16(float(sum) * d);
    }
}

void quant_q8_k(const float* src, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
        float amax = 0.0f, max = 0.0f;  // first element of largest magnitude wins
        for (int j = 0; j < QK_K; ++j) {
            const float a = std::fabs(src[j]);
            if (a > amax) {
                amax = a;
                max = src[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; ++j) {
            const int v = int(std::nearbyint(iscale * src[j]));
            y[i].qs[j] = int8_t(v < 127 ? v : 127);
        }
        for (int g = 0; g < QK_K / 16; ++g) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
            y[i].bsums[g] = int16_t(sum);
        }
        y[i].d = 1.0f / iscale;
    }
}

} // namespace

QuantFn scalar_quant(DType act_type) {
    switch (act_type) {
    case DType::F32: return quant_f32;
    case DType::Q8_0: return quant_q8_0;
    case DType::Q8_1: return quant_q8_1;
    case DType::Q8_K: return quant_q8_k;
    default: return nullptr;
    }
}

} // namespace arbor::quant
