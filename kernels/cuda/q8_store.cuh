// Quantization of activations to the integer decode products' blocks (q8_dot.h) by the
// kernel that computes them: a warp whose lanes hold the 32 elements of one block.
#pragma once

#include "q8_dot.h"
#include "warp_reduce.cuh"

namespace arbor::cuda {

// Lane i % 32 holds element i (v) of a row of cols; every lane of the warp calls this
// for the same block. Writes the element's code and, from the block's first lane, its
// scale and code sum into the quantized row.
__device__ __forceinline__ void store_q8(float v, int64_t i, int64_t cols, uint8_t* row) {
    const float d = q8::scale_for(warp_max(fabsf(v)));
    const int8_t c = q8::code(v, d);
    const int sum = warp_sum(int(c));
    reinterpret_cast<int8_t*>(row)[i] = c;
    if (i % q8::kBlock == 0) reinterpret_cast<q8::Scale*>(row + cols)[i / q8::kBlock] = {d, sum};
}

} // namespace arbor::cuda
