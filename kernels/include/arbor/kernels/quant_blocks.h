// Block layouts of the quantized types, byte-compatible with GGUF tensor data.
// Scales are stored as IEEE half (uint16_t) unless noted.
#pragma once

#include <cstdint>

namespace arbor {

constexpr int QK4_0 = 32;
constexpr int QK4_1 = 32;
constexpr int QK5_0 = 32;
constexpr int QK5_1 = 32;
constexpr int QK8_0 = 32;
constexpr int QK8_1 = 32;
constexpr int QK_K = 256;
constexpr int K_SCALE_SIZE = 12;
constexpr int QK4_NL = 32;
constexpr int QK_MXFP4 = 32;

struct BlockQ4_0 { uint16_t d; uint8_t qs[QK4_0 / 2]; };
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[QK4_1 / 2]; };
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; };
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; };
struct BlockQ8_0 { uint16_t d; int8_t qs[QK8_0]; };
// Activation block for the types with a minimum (q4_1, q5_1): s = d * sum(qs).
struct BlockQ8_1 { uint16_t d; uint16_t s; int8_t qs[QK8_1]; };

// Super-blocks of 256 with 8 sub-blocks of 32 and 6-bit packed scales and mins.
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; };
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// 16 sub-blocks of 16 with signed 8-bit scales.
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
// 16 sub-blocks of 16, 2-bit codes: sub-block i's scale (low nibble) and min (high
// nibble) in scales[i], both times the super-block's d and dmin.
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d; uint16_t dmin; };
// 16 sub-blocks of 16, 3-bit codes (two low bits in qs, the third in hmask) and signed
// 6-bit scales packed into 12 bytes.
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
// Non-linear 4-bit types: each code indexes a table of 16 values.
struct BlockIQ4_NL { uint16_t d; uint8_t qs[QK4_NL / 2]; };
// Eight sub-blocks of 32 with signed 6-bit scales (low four bits in scales_l, high two
// in scales_h) and IQ4_NL's table.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };
// OCP microscaling FP4: E2M1 codes and one power-of-two (E8M0) scale per 32.
struct BlockMXFP4 { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; };
// Activation block for the k-quants: float scale, and sums of each group of 16.
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

} // namespace arbor
