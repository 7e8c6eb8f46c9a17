// Scalar reference dequantization of the 2- to 4-bit types: Q2_K, Q3_K and the
// table-indexed IQ4_NL, IQ4_XS and MXFP4. Expressions follow GGUF's reference order
// (a sub-block's scale is d * sc, then each value is that product times the code, minus
// the min), so the values equal gguf-py's bit for bit (tests/data/quant).
#include "block_bits.h"
#include "kernel_table.h"

#include "arbor/kernels/fp16.h"

namespace arbor::quant {
namespace {

// Q2_K and Q3_K: element 128h + 32j + l (h < 2, j < 4, l < 32) has its two low bits at
// bit 2j of qs[32h + l], and belongs to sub-block (128h + 32j + l) / 16.
inline int two_bits(const uint8_t* qs, int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

void dequant_q2_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ2_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i, dst += QK_K) {
        const float d = fp16_to_fp32(b[i].d), dmin = fp16_to_fp32(b[i].dmin);
        for (int s = 0; s < 16; ++s) {
            const float dl = d * float(b[i].scales[s] & 0x0f), ml = dmin * float(b[i].scales[s] >> 4);
            for (int e = 16 * s; e < 16 * s + 16; ++e) dst[e] = dl * float(two_bits(b[i].qs, e)) - ml;
        }
    }
}

// Q3_K: the third bit of element e is bit e / 32 of hmask[e % 32]; a clear bit means
// the code is four less.
void dequant_q3_k(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockQ3_K*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i, dst += QK_K) {
        const float d = fp16_to_fp32(b[i].d);
        int8_t sc[16];
        unpack_q3_k_scales(b[i].scales, sc);
        for (int s = 0; s < 16; ++s) {
            const float dl = d * float(sc[s]);
            for (int e = 16 * s; e < 16 * s + 16; ++e) {
                const int high = (b[i].hmask[e % 32] >> (e / 32)) & 1;
                dst[e] = dl * float(two_bits(b[i].qs, e) - (high ? 0 : 4));
            }
        }
    }
}

// The 32-element table types: byte j holds element j (low nibble) and j + 16 (high).
void dequant_iq4_nl(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_NL*>(src);
    for (int64_t i = 0; i < n / QK4_NL; ++i, dst += QK4_NL) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * float(kIq4NlValues[b[i].qs[j] & 0x0f]);
            dst[j + 16] = d * float(kIq4NlValues[b[i].qs[j] >> 4]);
        }
    }
}

void dequant_iq4_xs(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockIQ4_XS*>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_fp32(b[i].d);
        for (int s = 0; s < 8; ++s, dst += 32) {
            const float dl = d * float(iq4_xs_scale(b[i], s));
            const uint8_t* q = b[i].qs + 16 * s;
            for (int j = 0; j < 16; ++j) {
                dst[j] = dl * float(kIq4NlValues[q[j] & 0x0f]);
                dst[j + 16] = dl * float(kIq4NlValues[q[j] >> 4]);
            }
        }
    }
}

void dequant_mxfp4(const void* src, float* dst, int64_t n) {
    const auto* b = static_cast<const BlockMXFP4*>(src);
    for (int64_t i = 0; i < n / QK_MXFP4; ++i, dst += QK_MXFP4) {
        const float d = e8m0_half(b[i].e);
        for (int j = 0; j < 16; ++j) {
            dst[j] = d * float(kMxfp4Values[b[i].qs[j] & 0x0f]);
            dst[j + 16] = d * float(kMxfp4Values[b[i].qs[j] >> 4]);
        }
    }
}

} // namespace

DequantFn scalar_dequant_low_bits(DType type) {
    switch (type) {
    case DType::Q2_K: return dequant_q2_k;
    case DType::Q3_K: return dequant_q3_k;
    case DType::IQ4_NL: return dequant_iq4_nl;
    case DType::IQ4_XS: return dequant_iq4_xs;
    case DType::MXFP4: return dequant_mxfp4;
    default: return nullptr;
    }
}

} // namespace arbor::quant
