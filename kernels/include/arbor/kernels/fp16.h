// IEEE half and bfloat16 conversions (scalar; F16C is used by the SIMD kernels).
#pragma once

#include <cstdint>
#include <cstring>

namespace arbor {

inline float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  // subnormal: renormalize
            exp = 127 - 15 + 1;
            while ((mant & 0x400) == 0) {
                mant <<= 1;
                --exp;
            }
            mant &= 0x3ff;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Round to nearest even.
inline uint16_t fp32_to_fp16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000;
    const uint32_t abs = x & 0x7fffffff;
    if (abs >= 0x7f800000u)  // inf or nan
        return uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
    if (abs >= 0x477ff000u)  // overflows to inf after rounding
        return uint16_t(sign | 0x7c00);
    if (abs < 0x38800000u) {  // result is subnormal or zero
        if (abs < 0x33000001u) return uint16_t(sign);
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e;  // 14..24
        uint32_t h = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) ++h;
        return uint16_t(sign | h);
    }
    uint32_t h = ((abs - 0x38000000u) >> 13);
    const uint32_t rem = abs & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return uint16_t(sign | h);
}

inline float bf16_to_fp32(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t fp32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffff) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet nan
    return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

} // namespace arbor
