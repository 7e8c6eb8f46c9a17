#include "synthetic_blocks.h"

#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace arbor::synth {
namespace {

// Standard deviations of uniformly random codes around their centre: n levels have
// variance (n^2 - 1) / 12.
double code_sd(int levels) { return std::sqrt((double(levels) * levels - 1.0) / 12.0); }

// Root mean square of the K-quant sub-block scales drawn below: uniform on [lo, hi].
double scale_rms(int lo, int hi) {
    double sum = 0.0;
    for (int s = lo; s <= hi; ++s) sum += double(s) * s;
    return std::sqrt(sum / (hi - lo + 1));
}

// 6-bit sub-block scales and mins of Q4_K/Q5_K: [32, 63], each min equal to its scale.
constexpr int kKScaleLo = 32, kKScaleHi = 63;
// Q6_K's signed 8-bit sub-block scales: [64, 127].
constexpr int kQ6ScaleLo = 64, kQ6ScaleHi = 127;

void random_bytes(Rng& rng, void* dst, size_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n >= 8) {
        const uint64_t v = rng.next();
        std::memcpy(p, &v, 8);
        p += 8;
        n -= 8;
    }
    if (n) {
        const uint64_t v = rng.next();
        std::memcpy(p, &v, n);
    }
}

// Each block's scale varies by +-25% around d, as real scales vary with the weights.
uint16_t block_scale(Rng& rng, double d) { return fp32_to_fp16(float(d * (0.75 + 0.5 * rng.uniform()))); }

// Minimum that centres codes 0..levels-1 on zero: -(levels - 1) / 2 times the scale.
uint16_t centring_min(uint16_t d, int levels) { return fp32_to_fp16(-fp16_to_fp32(d) * float(levels - 1) * 0.5f); }

// Packs 8 six-bit scales and mins the way unpack_k_scales (kernels) reads them.
void pack_k_scales(const uint8_t* sc, const uint8_t* mn, uint8_t* out) {
    for (int j = 0; j < 4; ++j) {
        out[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = uint8_t(mn[j] | ((mn[j + 4] >> 4) << 6));
        out[j + 8] = uint8_t((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

template <typename Block>
void fill_legacy(Rng& rng, uint8_t* out, int64_t n, double sigma, int levels, bool has_min) {
    const double d = sigma / code_sd(levels);
    for (int64_t i = 0; i < n; ++i) {
        Block b;
        random_bytes(rng, &b, sizeof b);  // codes (and qh where the type has it)
        b.d = block_scale(rng, d);
        if constexpr (requires { b.m; }) {
            if (has_min) b.m = centring_min(b.d, levels);
        }
        std::memcpy(out + size_t(i) * sizeof b, &b, sizeof b);
    }
}

// Q4_K/Q5_K: value = d * sc * q - dmin * mn with mn = sc and dmin = d * (levels - 1) / 2.
template <typename Block>
void fill_k_with_min(Rng& rng, uint8_t* out, int64_t n, double sigma, int levels) {
    const double d = sigma / (code_sd(levels) * scale_rms(kKScaleLo, kKScaleHi));
    for (int64_t i = 0; i < n; ++i) {
        Block b;
        random_bytes(rng, &b, sizeof b);
        uint8_t sc[8];
        for (auto& s : sc) s = uint8_t(kKScaleLo + rng.next() % (kKScaleHi - kKScaleLo + 1));
        pack_k_scales(sc, sc, b.scales);
        b.d = block_scale(rng, d);
        b.dmin = fp32_to_fp16(fp16_to_fp32(b.d) * float(levels - 1) * 0.5f);
        std::memcpy(out + size_t(i) * sizeof b, &b, sizeof b);
    }
}

void fill_q6_k(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    const double d = sigma / (code_sd(64) * scale_rms(kQ6ScaleLo, kQ6ScaleHi));
    for (int64_t i = 0; i < n; ++i) {
        BlockQ6_K b;
        random_bytes(rng, &b, sizeof b);
        for (auto& s : b.scales) s = int8_t(kQ6ScaleLo + rng.next() % (kQ6ScaleHi - kQ6ScaleLo + 1));
        b.d = block_scale(rng, d);
        std::memcpy(out + size_t(i) * sizeof b, &b, sizeof b);
    }
}

// n blocks of random bytes, each then given its scales (and codes) by `set`.
template <typename Block, typename Set>
void fill_blocks(Rng& rng, uint8_t* out, int64_t n, Set set) {
    for (int64_t i = 0; i < n; ++i) {
        Block b;
        random_bytes(rng, &b, sizeof b);
        set(b);
        std::memcpy(out + size_t(i) * sizeof b, &b, sizeof b);
    }
}

// Q2_K: value = d * sc * q - dmin * m (q 0..3) with m = sc in [8, 15] and dmin = 1.5 d,
// which centres the codes on zero.
void fill_q2_k(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    constexpr int kLo = 8, kHi = 15;
    const double d = sigma / (code_sd(4) * scale_rms(kLo, kHi));
    fill_blocks<BlockQ2_K>(rng, out, n, [&](BlockQ2_K& b) {
        for (auto& s : b.scales) {
            const int sc = kLo + int(rng.next() % (kHi - kLo + 1));
            s = uint8_t(sc | (sc << 4));
        }
        b.d = block_scale(rng, d);
        b.dmin = fp32_to_fp16(fp16_to_fp32(b.d) * 1.5f);
    });
}

// Q3_K: value = d * sc * q with q uniform on -3..3 (its -4 left out, so the codes centre
// on zero: the type has no min), sc in [16, 31], stored + 32 as Q3_K packs it. The code
// q + 4 has its two low bits in qs and its third in hmask.
void fill_q3_k(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    constexpr int kLo = 16, kHi = 31;
    const double d = sigma / (code_sd(7) * scale_rms(kLo, kHi));
    fill_blocks<BlockQ3_K>(rng, out, n, [&](BlockQ3_K& b) {
        std::memset(&b, 0, sizeof b);
        for (int e = 0; e < QK_K; ++e) {
            const int v = 1 + int(rng.next() % 7);
            b.qs[32 * (e / 128) + e % 32] |= uint8_t((v & 3) << (2 * (e % 128 / 32)));
            b.hmask[e % 32] |= uint8_t((v >> 2) << (e / 32));
        }
        for (int s = 0; s < 16; ++s) {
            const int v = kLo + int(rng.next() % (kHi - kLo + 1)) + 32;
            b.scales[s % 8] |= uint8_t((v & 0x0f) << (4 * (s / 8)));
            b.scales[8 + s % 4] |= uint8_t((v >> 4) << (2 * (s / 4)));
        }
        b.d = block_scale(rng, d);
    });
}

// The IQ4 grid's values have a root mean square of about 67.
constexpr double kIq4Rms = 67.0;

void fill_iq4_nl(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    fill_blocks<BlockIQ4_NL>(rng, out, n, [&](BlockIQ4_NL& b) { b.d = block_scale(rng, sigma / kIq4Rms); });
}

// IQ4_XS: sub-block scales in [16, 31], stored + 32.
void fill_iq4_xs(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    constexpr int kLo = 16, kHi = 31;
    const double d = sigma / (kIq4Rms * scale_rms(kLo, kHi));
    fill_blocks<BlockIQ4_XS>(rng, out, n, [&](BlockIQ4_XS& b) {
        b.scales_h = 0;
        std::memset(b.scales_l, 0, sizeof b.scales_l);
        for (int s = 0; s < 8; ++s) {
            const int v = kLo + int(rng.next() % (kHi - kLo + 1)) + 32;
            b.scales_l[s / 2] |= uint8_t((v & 0x0f) << (4 * (s % 2)));
            b.scales_h = uint16_t(b.scales_h | ((v >> 4) << (2 * s)));
        }
        b.d = block_scale(rng, d);
    });
}

// MXFP4: value = 2^(e - 128) * c for the doubled E2M1 codes c (root mean square about
// 5.85), the exponent byte e the one below sigma's or the one above, with the chance of
// the one above (p) making the mean square sigma's: 4^(e - 128) (1 + 3p) = (sigma / 5.85)^2.
void fill_mxfp4(Rng& rng, uint8_t* out, int64_t n, double sigma) {
    const double scale = sigma / 5.85;
    const int below = int(std::floor(std::log2(scale)));
    const double p_above = (scale * scale / std::ldexp(1.0, 2 * below) - 1.0) / 3.0;
    fill_blocks<BlockMXFP4>(rng, out, n, [&](BlockMXFP4& b) {
        b.e = uint8_t(std::clamp(128 + below + (rng.uniform() < p_above ? 1 : 0), 2, 254));
    });
}

// Uniform on [mean - sqrt(3) sigma, mean + sqrt(3) sigma): standard deviation sigma.
template <typename Store>
void fill_floats(Rng& rng, uint8_t* out, int64_t n, double mean, double sigma, Store store) {
    const double half_width = std::sqrt(3.0) * sigma;
    for (int64_t i = 0; i < n; ++i) store(out, i, float(mean + half_width * (2.0 * rng.uniform() - 1.0)));
}

} // namespace

uint64_t chunk_seed(uint64_t seed, uint64_t tensor_index, uint64_t chunk_index) {
    Rng mix(seed);
    uint64_t s = mix.next() ^ (tensor_index * 0xd1342543de82ef95ull);
    Rng mix2(s);
    return mix2.next() ^ (chunk_index * 0xa0761d6478bd642full);
}

void fill_random_blocks(DType type, double mean, double sigma, Rng& rng, uint8_t* out, int64_t n) {
    const bool is_float = type == DType::F32 || type == DType::F16 || type == DType::BF16;
    if (mean != 0.0 && !is_float)
        throw std::invalid_argument("synthetic weights: a nonzero mean needs a float type, not " +
                                    std::string(dtype_name(type)));
    switch (type) {
    case DType::F32:
        fill_floats(rng, out, n, mean, sigma, [](uint8_t* o, int64_t i, float v) { std::memcpy(o + 4 * i, &v, 4); });
        return;
    case DType::F16:
        fill_floats(rng, out, n, mean, sigma, [](uint8_t* o, int64_t i, float v) {
            const uint16_t h = fp32_to_fp16(v);
            std::memcpy(o + 2 * i, &h, 2);
        });
        return;
    case DType::BF16:
        fill_floats(rng, out, n, mean, sigma, [](uint8_t* o, int64_t i, float v) {
            const uint16_t h = fp32_to_bf16(v);
            std::memcpy(o + 2 * i, &h, 2);
        });
        return;
    case DType::Q4_0: fill_legacy<BlockQ4_0>(rng, out, n, sigma, 16, false); return;
    case DType::Q4_1: fill_legacy<BlockQ4_1>(rng, out, n, sigma, 16, true); return;
    case DType::Q5_0: fill_legacy<BlockQ5_0>(rng, out, n, sigma, 32, false); return;
    case DType::Q5_1: fill_legacy<BlockQ5_1>(rng, out, n, sigma, 32, true); return;
    case DType::Q8_0: fill_legacy<BlockQ8_0>(rng, out, n, sigma, 256, false); return;
    case DType::Q4_K: fill_k_with_min<BlockQ4_K>(rng, out, n, sigma, 16); return;
    case DType::Q5_K: fill_k_with_min<BlockQ5_K>(rng, out, n, sigma, 32); return;
    case DType::Q6_K: fill_q6_k(rng, out, n, sigma); return;
    case DType::Q2_K: fill_q2_k(rng, out, n, sigma); return;
    case DType::Q3_K: fill_q3_k(rng, out, n, sigma); return;
    case DType::IQ4_NL: fill_iq4_nl(rng, out, n, sigma); return;
    case DType::IQ4_XS: fill_iq4_xs(rng, out, n, sigma); return;
    case DType::MXFP4: fill_mxfp4(rng, out, n, sigma); return;
    default:
        throw std::invalid_argument("synthetic weights: no generator for type " + std::string(dtype_name(type)));
    }
}

} // namespace arbor::synth
