// Scalar reference dequantization. Expressions are evaluated in the same order as
// ggml's (e.g. q * d + m, never fused), so the values match bit for bit.
#include "block_bits.h"
#include "kernel_table.h"

#include "arbor/kernels/fp16.h"

#include <cstring>

namespace arbor::quant {
namespace {

void dequant_f32(const void* src, float* dst, int64_t n) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void dequant_f16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void dequant_bf16(const void* src, float* dst, int64_t n) {
    const auto* h = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
}

// In the 32-element types, byte j holds element j (low nibble) and j + 16 (high).
void dequant_q4_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ4_0*>(src);
    for (int64_t i = 0; i < n / QK4_0; ++i, dst += QK4_0) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK4_0 / 2; ++j) {
            dst[j] = float((b[i].qs[j] & 0x0f) - 8) * d;
            dst[j + 16] = float((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequant_q4_1(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ4_1*>(src);
    for (int64_t i = 0; i < n / QK4_1; ++i, dst += QK4_1) {
        const float d = fp16_to_fp32(b[i].d);
        const float m = fp16_to_fp32(b[i].m);
        for (int j = 0; j < QK4_1 / 2; ++j) {
            dst[j] = float(b[i].qs[j] & 0x0f) * d + m;
            dst[j + 16] = float(b[i].qs[j] >> 4) * d + m;
        }
    }
}

void dequant_q5_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ5_0*>(src);
    for (int64_t i = 0; i < n / QK5_0; ++i, dst += QK5_0) {
        const float d = fp16_to_fp32(b[i].d);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK5_0 / 2; ++j) {
            const int lo = (b[i].qs[j] & 0x0f) | int(((qh >> j) & 1) << 4);
            const int hi = (b[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
            dst[j] = float(lo - 16) * d;
            dst[j + 16] = float(hi - 16) * d;
        }
    }
}

void dequant_q5_1(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ5_1*>(src);
    for (int64_t i = 0; i < n / QK5_1; ++i, dst += QK5_1) {
        const float d = fp16_to_fp32(b[i].d);
        const float m = fp16_to_fp32(b[i].m);
        const uint32_t qh = load_qh(b[i].qh);
        for (int j = 0; j < QK5_1 / 2; ++j) {
            const int lo = (b[i].qs[j] & 0x0f) | int(((qh >> j) & 1) << 4);
            const int hi = (b[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
            dst[j] = float(lo) * d + m;
            dst[j + 16] = float(hi) * d + m;
        }
    }
}

void dequant_q8_0(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ8_0*>(src);
    for (int64_t i = 0; i < n / QK8_0; ++i, dst += QK8_0) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < QK8_0; ++j) dst[j] = float(b[i].qs[j]) * d;
    }
}

// Q4_K: four groups of 64; byte l of group g holds element 64g + l (low nibble,
// sub-block 2g) and 64g + 32 + l (high nibble, sub-block 2g + 1).
void dequant_q4_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ4_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        const float dmin = fp16_to_fp32(b[i].dmin);
        uint8_t sc[8], mn[8];
        unpack_k_scales(b[i].scales, sc, mn);
        const uint8_t* q = b[i].qs;
        for (int g = 0; g < 4; ++g, q += 32) {
            const float d1 = d * float(sc[2 * g]), m1 = dmin * float(mn[2 * g]);
            const float d2 = d * float(sc[2 * g + 1]), m2 = dmin * float(mn[2 * g + 1]);
            for (int l = 0; l < 32; ++l) *dst++ = d1 * float(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; ++l) *dst++ = d2 * float(q[l] >> 4) - m2;
        }
    }
}

// Q5_K: as Q4_K, with the fifth bit of element 32s + l in bit s of qh[l].
void dequant_q5_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ5_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        const float dmin = fp16_to_fp32(b[i].dmin);
        uint8_t sc[8], mn[8];
        unpack_k_scales(b[i].scales, sc, mn);
        const uint8_t* q = b[i].qs;
        const uint8_t* qh = b[i].qh;
        for (int g = 0; g < 4; ++g, q += 32) {
            const int s1 = 2 * g, s2 = 2 * g + 1;
            const float d1 = d * float(sc[s1]), m1 = dmin * float(mn[s1]);
            const float d2 = d * float(sc[s2]), m2 = dmin * float(mn[s2]);
            for (int l = 0; l < 32; ++l)
                *dst++ = d1 * float((q[l] & 0x0f) | (((qh[l] >> s1) & 1) << 4)) - m1;
            for (int l = 0; l < 32; ++l)
                *dst++ = d2 * float((q[l] >> 4) | (((qh[l] >> s2) & 1) << 4)) - m2;
        }
    }
}

// Q6_K: two halves of 128. In half h, for l < 32 (ql, qh offset by 64h, 32h):
//   element l      = ql[l] low      | qh[l] bits 0-1
//   element l + 32 = ql[l + 32] low | qh[l] bits 2-3
//   element l + 64 = ql[l] high     | qh[l] bits 4-5
//   element l + 96 = ql[l + 32] high| qh[l] bits 6-7
// each minus 32; element e of the block uses scales[e / 16].
void dequant_q6_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ6_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i, dst += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = b[i].ql + 64 * h;
            const uint8_t* qh = b[i].qh + 32 * h;
            float* y = dst + 128 * h;
            const int8_t* sc = b[i].scales + 8 * h;
            for (int l = 0; l < 32; ++l) {
                const int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * float(sc[l / 16]) * float(q0);
                y[l + 32] = d * float(sc[l / 16 + 2]) * float(q1);
                y[l + 64] = d * float(sc[l / 16 + 4]) * float(q2);
                y[l + 96] = d * float(sc[l / 16 + 6]) * float(q3);
            }
        }
    }
}

} // namespace

DequantFn scalar_dequant(DType type) {
    switch (type) {
    case DType::F32: return dequant_f32;
    case DType::F16: return dequant_f16;
    case DType::BF16: return dequant_bf16;
    case DType::Q4_0: return dequant_q4_0;
    case DType::Q4_1: return dequant_q4_1;
    case DType::Q5_0: return dequant_q5_0;
    case DType::Q5_1: return dequant_q5_1;
    case DType::Q8_0: return dequant_q8_0;
    case DType::Q4_K: return dequant_q4_k;
    case DType::Q5_K: return dequant_q5_k;
    case DType::Q6_K: return dequant_q6_k;
    default: return scalar_dequant_low_bits(type);
    }
}

} // namespace arbor::quant
