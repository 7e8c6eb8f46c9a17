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

} // namespace arbor::quant
