// Scalar reference dot products for the float types and the 32-element block types.
// Integer sums per block, then one float multiply-add per block, as ggml does.
#include "block_bits.h"
#include "kernel_table.h"

#include "arbor/kernels/fp16.h"

#include <type_traits>

namespace arbor::quant {
namespace {

// The float types accumulate in double: this is the reference the SIMD paths are
// measured against.
float dot_f32(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(y[i]);
    return float(sum);
}

float dot_f16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(fp16_to_fp32(x[i])) * double(y[i]);
    return float(sum);
}

float dot_bf16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += double(bf16_to_fp32(x[i])) * double(y[i]);
    return float(sum);
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_0; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += ((x[i].qs[j] & 0x0f) - 8) * y[i].qs[j];
            sumi += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        }
        sum += float(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return sum;
}

// With a minimum: sum_j (d qx_j + m) dy qy_j = d dy sum(qx qy) + m * s, s = dy sum(qy).
float dot_q4_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK4_1; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += (x[i].qs[j] & 0x0f) * y[i].qs[j];
            sumi += (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        }
        sum += float(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) +
               fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sum;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_0; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            const int lo = (x[i].qs[j] & 0x0f) | int(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
            sumi += (lo - 16) * y[i].qs[j] + (hi - 16) * y[i].qs[j + 16];
        }
        sum += float(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return sum;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK5_1; ++i) {
        const uint32_t qh = load_qh(x[i].qh);
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            const int lo = (x[i].qs[j] & 0x0f) | int(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
            sumi += lo * y[i].qs[j] + hi * y[i].qs[j + 16];
        }
        sum += float(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d)) +
               fp16_to_fp32(x[i].m) * fp16_to_fp32(y[i].s);
    }
    return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK8_0; ++i) {
        int sumi = 0;
        for (int j = 0; j < QK8_0; ++j) sumi += x[i].qs[j] * y[i].qs[j];
        sum += float(sumi) * (fp16_to_fp32(x[i].d) * fp16_to_fp32(y[i].d));
    }
    return sum;
}

// Multi-row forms for the reference: plain loops over the single-row dot.
template <DType W>
void multi_acts(int64_t n, const void* w, const void* acts, size_t act_stride, int n_act, float* out,
                int64_t out_stride) {
    const VecDotFn dot = scalar_vec_dot(W);
    const auto* a = static_cast<const char*>(acts);
    for (int r = 0; r < n_act; ++r) out[r * out_stride] = dot(n, w, a + r * act_stride);
}

template <DType W>
void multi_rows(int64_t n, const void* w, size_t w_stride, int64_t n_rows, const void* act, float* out,
                int64_t out_stride) {
    const VecDotFn dot = scalar_vec_dot(W);
    const auto* base = static_cast<const char*>(w);
    for (int64_t r = 0; r < n_rows; ++r) out[r * out_stride] = dot(n, base + r * w_stride, act);
}

template <template <DType> class Pick>
std::decay_t<decltype(Pick<DType::F32>::fn)> for_type(DType weight) {
    switch (weight) {
    case DType::F32: return Pick<DType::F32>::fn;
    case DType::F16: return Pick<DType::F16>::fn;
    case DType::BF16: return Pick<DType::BF16>::fn;
    case DType::Q4_0: return Pick<DType::Q4_0>::fn;
    case DType::Q4_1: return Pick<DType::Q4_1>::fn;
    case DType::Q5_0: return Pick<DType::Q5_0>::fn;
    case DType::Q5_1: return Pick<DType::Q5_1>::fn;
    case DType::Q8_0: return Pick<DType::Q8_0>::fn;
    case DType::Q4_K: return Pick<DType::Q4_K>::fn;
    case DType::Q5_K: return Pick<DType::Q5_K>::fn;
    case DType::Q6_K: return Pick<DType::Q6_K>::fn;
    default: return nullptr;
    }
}

template <DType W>
struct PickActs {
    static constexpr VecDotMultiFn fn = multi_acts<W>;
};
template <DType W>
struct PickRows {
    static constexpr VecDotRowsFn fn = multi_rows<W>;
};

} // namespace

VecDotFn scalar_vec_dot(DType weight) {
    switch (weight) {
    case DType::F32: return dot_f32;
    case DType::F16: return dot_f16;
    case DType::BF16: return dot_bf16;
    case DType::Q4_0: return dot_q4_0;
    case DType::Q4_1: return dot_q4_1;
    case DType::Q5_0: return dot_q5_0;
    case DType::Q5_1: return dot_q5_1;
    case DType::Q8_0: return dot_q8_0;
    default: return scalar_vec_dot_kquant(weight);
    }
}

VecDotMultiFn scalar_vec_dot_multi(DType weight) { return for_type<PickActs>(weight); }

VecDotRowsFn scalar_vec_dot_rows(DType weight) { return for_type<PickRows>(weight); }

} // namespace arbor::quant
