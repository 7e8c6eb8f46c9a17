// The scalar reference of the float-activation product (the contract in float_dot.h,
// emulated lane by lane) and the dispatch.
#include "arbor/kernels/float_dot.h"

#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/quant.h"

#include <algorithm>
#include <cmath>

namespace arbor {

FloatDotSplit float_dot_split(DType type, int64_t n) {
    const int64_t unit = std::max<int64_t>(dtype_info(type).block_size, 8);
    const int64_t units = n / unit;
    return {units / 2 * unit, units * unit};
}

namespace ref {
namespace {

float dot_dequantized(const float* v, const float* x, int64_t n, FloatDotSplit parts) {
    float acc[2][8] = {};
    for (int64_t i = 0; i < parts.whole; i += 8) {
        float* a = acc[i < parts.split ? 0 : 1];
        for (int l = 0; l < 8; ++l) a[l] = std::fma(v[i + l], x[i + l], a[l]);
    }
    float s8[8];
    for (int l = 0; l < 8; ++l) s8[l] = acc[0][l] + acc[1][l];
    const float q0 = s8[0] + s8[4], q1 = s8[1] + s8[5], q2 = s8[2] + s8[6], q3 = s8[3] + s8[7];
    float s = (q0 + q2) + (q1 + q3);
    for (int64_t i = parts.whole; i < n; ++i) s = std::fma(v[i], x[i], s);
    return s;
}

} // namespace

float float_dot(DType type, int64_t n, const void* w_row, const float* x) {
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(type, w_row, v.data(), n, Isa::Scalar);
    return dot_dequantized(v.data(), x, n, float_dot_split(type, n));
}

void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer) {
    buffer.resize(static_cast<size_t>(n));
    const FloatDotSplit parts = float_dot_split(type, n);
    for (int64_t r = 0; r < n_w; ++r) {
        dequantize_row(type, static_cast<const uint8_t*>(w) + size_t(r) * row_stride, buffer.data(), n, Isa::Scalar);
        for (int64_t j = 0; j < n_x; ++j) y[j * ldy + r] = dot_dequantized(buffer.data(), x + j * ldx, n, parts);
    }
}

} // namespace ref

void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer) {
    if (avx2::available()) avx2::float_dot_tile(type, n, w, row_stride, n_w, x, ldx, n_x, y, ldy, buffer);
    else ref::float_dot_tile(type, n, w, row_stride, n_w, x, ldx, n_x, y, ldy, buffer);
}

} // namespace arbor
