#include "arbor/kernels/gelu_tanh_mul.h"

#include <cmath>

namespace arbor {

void gelu_tanh_mul(float* x, const float* g, int64_t n) {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCubic = 0.044715f;
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * v * (1.0f + kCubic * v * v))) * g[i];
    }
}

} // namespace arbor
