// Multi-row entry points built from a single-row dot, for the types and ISAs without
// a dedicated kernel. Static: see block_bits.h.
#pragma once

#include "arbor/kernels/quant.h"

namespace arbor::quant {

template <VecDotFn Dot>
static void acts_by_single(int64_t n, const void* w, const void* acts, size_t act_stride, int n_act,
                           float* out, int64_t out_stride) {
    const auto* a = static_cast<const char*>(acts);
    for (int r = 0; r < n_act; ++r) out[r * out_stride] = Dot(n, w, a + r * act_stride);
}

template <VecDotFn Dot>
static void rows_by_single(int64_t n, const void* w, size_t w_stride, int64_t n_rows, const void* act,
                           float* out, int64_t out_stride) {
    const auto* base = static_cast<const char*>(w);
    for (int64_t r = 0; r < n_rows; ++r) out[r * out_stride] = Dot(n, base + r * w_stride, act);
}

} // namespace arbor::quant
