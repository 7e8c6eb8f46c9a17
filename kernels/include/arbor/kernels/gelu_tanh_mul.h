// The gated activation of Gemma's feed-forward network: GELU in its tanh form times the
// up projection. Scalar only: on Gemma 3 it runs once per FFN row (n_ff elements), small
// beside the products around it.
#pragma once

#include <cstdint>

namespace arbor {

// In place: x = gelu_tanh(x) * g, where
//   gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * x * (1 + 0.044715 * x * x))),
// in float with libm's tanh, in that order (llama.cpp's float GELU).
void gelu_tanh_mul(float* x, const float* g, int64_t n);

} // namespace arbor
