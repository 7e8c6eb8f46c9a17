// Unpacking, the scalar references of the block products, and dispatch. The references
// follow the same per-block operation order as the AVX2 kernels (8 lanes, two
// alternating accumulators), emulated in scalar code, so every path is bit-identical.
#include "arbor/kernels/float_dot.h"

#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"

#include <cmath>
#include <vector>

namespace arbor {

void block_sums_32(const float* x, int64_t n, float* sums) {
    for (int64_t b = 0; b < n / 32; ++b) {
        float s = 0.0f;
        for (int i = 0; i < 32; ++i) s += x[b * 32 + i];
        sums[b] = s;
    }
}

bool has_block_kernels(DType type) { return type == DType::Q4_0 || type == DType::Q4_1 || type == DType::Q8_0; }

namespace {

// A weight row as float codes, per-block scales and minimums (zero without).
void unpack_blocks(DType type, const void* weight_row, int64_t n, float* codes, float* d, float* m) {
    for (int64_t b = 0; b < n / 32; ++b) {
        float* c = codes + b * 32;
        switch (type) {
        case DType::Q4_0: {
            const auto& blk = static_cast<const BlockQ4_0*>(weight_row)[b];
            for (int i = 0; i < 16; ++i) {
                c[i] = float((blk.qs[i] & 0x0f) - 8);
                c[i + 16] = float((blk.qs[i] >> 4) - 8);
            }
            d[b] = fp16_to_fp32(blk.d);
            m[b] = 0.0f;
            break;
        }
        case DType::Q4_1: {
            const auto& blk = static_cast<const BlockQ4_1*>(weight_row)[b];
            for (int i = 0; i < 16; ++i) {
                c[i] = float(blk.qs[i] & 0x0f);
                c[i + 16] = float(blk.qs[i] >> 4);
            }
            d[b] = fp16_to_fp32(blk.d);
            m[b] = fp16_to_fp32(blk.m);
            break;
        }
        case DType::Q8_0: {
            const auto& blk = static_cast<const BlockQ8_0*>(weight_row)[b];
            for (int i = 0; i < 32; ++i) c[i] = float(blk.qs[i]);
            d[b] = fp16_to_fp32(blk.d);
            m[b] = 0.0f;
            break;
        }
        default: break;
        }
    }
}

} // namespace

namespace ref {
namespace {

// One row against one activation row, in the documented operation order.
float block_dot(const float* c, const float* d, const float* m, const float* x, const float* xs, int64_t n) {
    float acc[2][8] = {};
    float mins = 0.0f;
    for (int64_t b = 0; b < n / 32; ++b) {
        for (int l = 0; l < 8; ++l) {
            const int64_t i = b * 32 + l;
            float t = c[i] * x[i];
            t = std::fma(c[i + 8], x[i + 8], t);
            t = std::fma(c[i + 16], x[i + 16], t);
            t = std::fma(c[i + 24], x[i + 24], t);
            acc[b & 1][l] = std::fma(d[b], t, acc[b & 1][l]);
        }
        mins = std::fma(m[b], xs[b], mins);
    }
    // The AVX2 horizontal sum: halves, then pairs, then the last two.
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = acc[0][l] + acc[1][l];
    const float q0 = v[0] + v[4], q1 = v[1] + v[5], q2 = v[2] + v[6], q3 = v[3] + v[7];
    const float p0 = q0 + q2, p1 = q1 + q3;
    return (p0 + p1) + mins;
}

template <DType T>
float dot_unpacked(int64_t n, const void* w, const float* x, const float* xs) {
    std::vector<float> codes(static_cast<size_t>(n)), d(static_cast<size_t>(n / 32)), m(static_cast<size_t>(n / 32));
    unpack_blocks(T, w, n, codes.data(), d.data(), m.data());
    return block_dot(codes.data(), d.data(), m.data(), x, xs, n);
}

} // namespace

float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* s) { return dot_unpacked<DType::Q4_0>(n, w, x, s); }
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* s) { return dot_unpacked<DType::Q4_1>(n, w, x, s); }
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* s) { return dot_unpacked<DType::Q8_0>(n, w, x, s); }

void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy) {
    std::vector<float> row(static_cast<size_t>(n)), d(static_cast<size_t>(n / 32)), m(static_cast<size_t>(n / 32));
    for (int64_t r = 0; r < n_w; ++r) {
        const void* wr = static_cast<const uint8_t*>(w) + size_t(r) * row_stride;
        if (!has_block_kernels(type)) {
            dequantize_row(type, wr, row.data(), n, Isa::Scalar);
            for (int j = 0; j < n_x; ++j) out[j * ldy + r] = ref::dot_f32(row.data(), x + j * ldx, n);
            continue;
        }
        unpack_blocks(type, wr, n, row.data(), d.data(), m.data());
        for (int j = 0; j < n_x; ++j)
            out[j * ldy + r] = block_dot(row.data(), d.data(), m.data(), x + j * ldx, xs + j * (n / 32), n);
    }
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

void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy) {
    if (avx2::available()) avx2::dot_multi_rows(type, n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy);
    else ref::dot_multi_rows(type, n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy);
}

} // namespace arbor
