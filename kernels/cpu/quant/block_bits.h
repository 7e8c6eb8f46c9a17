// Bit unpacking shared by the scalar and SIMD kernels. Functions are static so that
// each translation unit (scalar or -mavx2) keeps its own copy: an inline function with
// external linkage compiled with -mavx2 could otherwise be picked by the linker for
// the scalar path too.
#pragma once

#include "arbor/kernels/quant_blocks.h"

#include <cstdint>
#include <cstring>

namespace arbor::quant {

// Q4_K/Q5_K pack 8 six-bit scales and 8 six-bit mins into 12 bytes:
//   bytes 0-3:  scale j (j < 4) in bits 0-5, bits 4-5 of scale j+4 in bits 6-7
//   bytes 4-7:  min j   (j < 4) in bits 0-5, bits 4-5 of min j+4   in bits 6-7
//   bytes 8-11: low 4 bits of scale j+4 in bits 0-3, of min j+4 in bits 4-7
static inline void unpack_k_scales(const uint8_t* s, uint8_t* scales, uint8_t* mins) {
    for (int j = 0; j < 4; ++j) {
        scales[j] = s[j] & 63;
        mins[j] = s[j + 4] & 63;
        scales[j + 4] = uint8_t((s[j + 8] & 0x0f) | ((s[j] >> 6) << 4));
        mins[j + 4] = uint8_t((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

// Q5_0/Q5_1 keep the fifth bit of element j in bit j of a little-endian uint32.
static inline uint32_t load_qh(const uint8_t* qh) {
    uint32_t v;
    std::memcpy(&v, qh, sizeof v);
    return v;
}

// Q3_K's 16 signed 6-bit scales from 12 bytes: the low four bits of scale i in nibble
// i / 8 of byte i % 8, the high two at bits 2 (i / 4) of byte 8 + i % 4; stored + 32.
static inline void unpack_q3_k_scales(const uint8_t* s, int8_t* scales) {
    for (int i = 0; i < 16; ++i) {
        const int lo = (s[i % 8] >> (4 * (i / 8))) & 0x0f;
        const int hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        scales[i] = int8_t((lo | (hi << 4)) - 32);
    }
}

// IQ4_XS: sub-block i's scale (minus 32): four bits from scales_l, two from scales_h.
static inline int iq4_xs_scale(const BlockIQ4_XS& b, int i) {
    return (((b.scales_l[i / 2] >> (4 * (i % 2))) & 0x0f) | (((b.scales_h >> (2 * i)) & 3) << 4)) - 32;
}

// The tables the 4-bit codes index: IQ4_NL's (and IQ4_XS's) non-linear grid, and
// MXFP4's E2M1 values doubled (the scale is halved to match, as in GGUF's reference).
static constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
static constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half of the E8M0 scale 2^(e - 127): exact, subnormal for e < 2.
static inline float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

} // namespace arbor::quant
