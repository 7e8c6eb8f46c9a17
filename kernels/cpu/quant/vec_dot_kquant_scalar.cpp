// Scalar reference dot products of the k-quants with Q8_K activations. Per
// super-block, integer sums per sub-block are weighted by the integer scales; the
// minimum terms use the activation's precomputed sums of 16 (bsums).
#include "block_bits.h"
#include "kernel_table.h"

#include "arbor/kernels/fp16.h"

namespace arbor::quant {
namespace {

// Q4_K and Q5_K: value = d sc q - dmin mn, so
//   dot = y.d * (d * sum_s sc_s sum(q y) - dmin * sum_s mn_s sum(y over s)).
template <bool kFifthBit, class Block>
float dot_q45_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const Block*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        uint8_t sc[8], mn[8];
        unpack_k_scales(x[i].scales, sc, mn);
        const int8_t* q8 = y[i].qs;
        const uint8_t* q = x[i].qs;
        int sumi = 0;
        for (int g = 0; g < 4; ++g, q += 32, q8 += 64) {
            int lo = 0, hi = 0;
            for (int l = 0; l < 32; ++l) {
                int ql = q[l] & 0x0f, qh = q[l] >> 4;
                if constexpr (kFifthBit) {
                    ql |= ((x[i].qh[l] >> (2 * g)) & 1) << 4;
                    qh |= ((x[i].qh[l] >> (2 * g + 1)) & 1) << 4;
                }
                lo += ql * q8[l];
                hi += qh * q8[l + 32];
            }
            sumi += sc[2 * g] * lo + sc[2 * g + 1] * hi;
        }
        int summ = 0;
        for (int s = 0; s < 8; ++s) summ += mn[s] * (y[i].bsums[2 * s] + y[i].bsums[2 * s + 1]);
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
        sum += d * float(sumi) - dmin * float(summ);
    }
    return sum;
}

float dot_q6_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int sumi = 0;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[i].ql + 64 * h;
            const uint8_t* qh = x[i].qh + 32 * h;
            const int8_t* q8 = y[i].qs + 128 * h;
            const int8_t* sc = x[i].scales + 8 * h;
            int part[8] = {};  // per sub-block of 16 within this half
            for (int l = 0; l < 32; ++l) {
                const int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                part[l / 16 + 0] += q0 * q8[l];
                part[l / 16 + 2] += q1 * q8[l + 32];
                part[l / 16 + 4] += q2 * q8[l + 64];
                part[l / 16 + 6] += q3 * q8[l + 96];
            }
            for (int s = 0; s < 8; ++s) sumi += sc[s] * part[s];
        }
        sum += fp16_to_fp32(x[i].d) * y[i].d * float(sumi);
    }
    return sum;
}

} // namespace

VecDotFn scalar_vec_dot_kquant(DType weight) {
    switch (weight) {
    case DType::Q4_K: return dot_q45_k<false, BlockQ4_K>;
    case DType::Q5_K: return dot_q45_k<true, BlockQ5_K>;
    case DType::Q6_K: return dot_q6_k;
    default: return nullptr;
    }
}

} // namespace arbor::quant
