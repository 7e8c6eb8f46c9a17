// Quantized weight matrices repacked as panels of eight rows, multiplied with activations
// quantized to 16 bits per block in integer arithmetic (the CPU backend's default for
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS
// weights).
//
// Why panels: in GGUF order a vector holds elements of one weight row, so every
// (weight row, activation row) pair needs its own accumulator and a horizontal sum. In a
// panel a vector holds two neighbouring elements of each of eight weight rows: one
// vector of codes multiplies a broadcast pair of activation codes of every activation
// row in the tile (vpmaddwd, or VNNI's vpdpwssd), and each accumulator is eight finished outputs.
// Why 16-bit activations: converting weight codes to floats cost more than the products
// themselves; integer products of codes skip it and need half the instructions. Each
// activation is rounded to 1/32767 of its block's largest magnitude, a relative error
// 256 times smaller than llama.cpp's 8-bit activations.
//
// Layout: panel p holds rows 8p .. 8p + 7 (rows past the matrix's end are zeros), one
// panel block per quantization block of the rows, the blocks in column order. A panel
// block holds the eight rows' scales and then their codes, row by row in pairs of
// neighbouring elements (PanelBlockQ4_1, PanelBlockQ8_0 below); the bytes equal the
// GGUF blocks' in number. Q4_K panels hold one PanelBlockQ4_K per super-block of 256:
// the eight rows' super-block scales, their 6-bit sub-block scales and mins unpacked to
// bytes, and eight sub-blocks of codes in Q4_1's order (1184 bytes for the GGUF's 1152).
// Q5_K panels add to that the fifth bit of every code in an order matching the nibbles'
// (1440 bytes for the GGUF's 1408).
// Q6_K panels hold one PanelBlockQ6_K per super-block: the low four bits of the codes in
// Q4_1's order, the high two bits in a matching order, the sub-block scales side by side
// (1680 bytes, as the GGUF's).
// Q5_0 and Q5_1 panels hold Q4_1's nibbles and the fifth bits in Q5_K's order (176 and 192
// bytes for 8 x 22 and 8 x 24). IQ4_NL panels hold Q4_1's nibbles, each an index into
// the 16-entry table kIq4NlValues (144 bytes, as the GGUF's); IQ4_XS panels the same per
// sub-block of 32 and the sub-blocks' signed 6-bit scales as bytes (1104 for 1088).
// Q3_K panels hold each 3-bit code plus 4 as a nibble in Q4_1's order and the 16 signed
// 6-bit scales as bytes (1168 bytes for 8 x 110: simpler than a 3-bit order, 33% more).
// Q2_K panels hold the 2-bit codes four to a byte in an order that one load and one
// shift turn into Q4_1's pairs, and GGUF's scale-and-min bytes side by side (672 bytes,
// as the GGUF's). MXFP4 panels hold IQ4_NL's indices into kMxfp4Values and the exponent
// bytes (136 bytes, as the GGUF's).
//
// The contract every path reproduces bit for bit (so a sequence's logits never depend on
// what else shares its batch, nor on the tile that computed it). Activation row t, per
// block b of 32 elements x[k]:
//   a = max |x[k]|;  d[t][b] = a / L;  inv = d > 0 ? 1 / d : 0 (floats), where L, the
//   code limit, is 32767 (16-bit codes) or 127 (8-bit codes);
//   c[t][k] = x[k] * inv rounded to the nearest integer, ties to even;
//   s[t][b] = d[t][b] * float(sum of the block's c[t][k]);
//   h[t][b][i] = d[t][b] * float(sum of c[t][k] over half i = 0, 1 of the block: k < 16, k >= 16).
// Weight row r, block b: codes q[r][k] (Q4_0, Q4_1, Q4_K: 0..15, Q5_1, Q5_K: 0..31, Q5_0:
// -16..15 (the GGUF code minus 16), Q2_K: 0..3, Q3_K: -4..3, Q8_0: -128..127, Q6_K: -32..31, IQ4_NL and
// IQ4_XS: the table's value, -127..113, MXFP4: kMxfp4Values's, -12..12), scale
// dw, min mw (Q4_0: -8 dw, exact in half precision, so its blocks take the Q4_1 layout;
// Q4_K and Q5_K, sub-block j of a super-block with scales D, Dmin: dw = D * float(sc[j]) and
// mw = -(Dmin * float(m[j])), both exact in float and the very values GGUF dequantizes
// with, d1 * q - m1; IQ4_XS: dw = D * float(sc[j]), exact, and no min; MXFP4: dw = half
// of 2^(e - 127), as GGUF's e8m0 scale, and no min).
//   y[t][r] = acc after acc = 0 and, for b = 0, 1, ... in order,
//     n = sum over the block of q[r][k] * c[t][k]   (exact integers)
//     acc = fma(float(n), dw[r][b] * d[t][b], acc)
//     Q4_0, Q4_1, Q5_1, Q4_K and Q5_K: acc = fma(mw[r][b], s[t][b], acc)
// Q6_K and Q3_K have a scale per 16 elements and no min: a block's two halves i = 0, 1 in
// turn, each with the sum n over its 16 elements and dw = D * float(sc[2b + i]) (exact).
// Q2_K has a scale and a min per 16 elements: the halves i = 0, 1 in turn, each
//     acc = fma(float(n), dw * d[t][b], acc);  acc = fma(mw, h[t][b][i], acc)
// with its n, dw = D * float(sc[2b + i] & 15) and mw = -(Dmin * float(sc[2b + i] >> 4)).
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/tensor_view.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace arbor {

constexpr int kPanelRows = 8;

// Elements 4h + j (low nibble) and 4h + j + 2 (high nibble) of row r at qs[h][2r + j],
// j = 0, 1: widened to 16 bits, the low nibbles of group h are the pairs of elements
// (4h, 4h + 1) of the eight rows, the high nibbles the pairs (4h + 2, 4h + 3).
struct PanelBlockQ4_1 {
    uint16_t d[kPanelRows];
    uint16_t m[kPanelRows];
    uint8_t qs[8][2 * kPanelRows];
};
// Element 2g + j of row r at qs[g][2r + j].
struct PanelBlockQ8_0 {
    uint16_t d[kPanelRows];
    int8_t qs[16][2 * kPanelRows];
};
// Super-block of 256: sub-block j's codes in qs[j] as PanelBlockQ4_1's, its scale and
// min of row r at sc[j][r] and m[j][r] (eight rows' side by side: one load widens them).
struct PanelBlockQ4_K {
    uint16_t d[kPanelRows];
    uint16_t dmin[kPanelRows];
    uint8_t sc[8][kPanelRows];
    uint8_t m[8][kPanelRows];
    uint8_t qs[8][8][2 * kPanelRows];
};
// Super-block of 256: PanelBlockQ4_K's fields, and the fifth bit (16) of each code in
// qh[j][h / 4][2r + i] at bit 2 (h % 4) + half, for the element that the low nibble
// (half 0) or high nibble (half 1) of qs[j][h][2r + i] holds.
struct PanelBlockQ5_K : PanelBlockQ4_K {
    uint8_t qh[8][2][2 * kPanelRows];
};
// Super-block of 256: code q of element 32j + k of row r (q + 32 the GGUF's 6-bit value)
// has its low four bits where PanelBlockQ4_1 would (ql[j] as its qs), and its high two
// bits in qh[j][h % 4][2r + i] at bit 4 (h / 4) + 2 half, for the element that the low
// nibble (half 0) or high nibble (half 1) of qs[h][2r + i] holds. Sub-block i's (16
// elements') scale of row r at sc[i][r].
struct PanelBlockQ6_K {
    uint16_t d[kPanelRows];
    int8_t sc[16][kPanelRows];
    uint8_t ql[8][8][2 * kPanelRows];
    uint8_t qh[8][4][2 * kPanelRows];
};
// Q5_0 and Q5_1: PanelBlockQ4_1's nibbles with the fifth bit (16) of each code in
// qh[h / 4][2r + i] at bit 2 (h % 4) + half, as PanelBlockQ5_K's per sub-block.
struct PanelBlockQ5_0 {
    uint16_t d[kPanelRows];
    uint8_t qs[8][2 * kPanelRows];
    uint8_t qh[2][2 * kPanelRows];
};
struct PanelBlockQ5_1 {
    uint16_t d[kPanelRows];
    uint16_t m[kPanelRows];
    uint8_t qs[8][2 * kPanelRows];
    uint8_t qh[2][2 * kPanelRows];
};
// Table indices in PanelBlockQ4_1's order.
struct PanelBlockIQ4_NL {
    uint16_t d[kPanelRows];
    uint8_t qs[8][2 * kPanelRows];
};
// Super-block of 256: sub-block j's table indices in qs[j] as PanelBlockQ4_1's, its scale
// (the GGUF's 6-bit value minus 32) of row r at sc[j][r].
struct PanelBlockIQ4_XS {
    uint16_t d[kPanelRows];
    int8_t sc[8][kPanelRows];
    uint8_t qs[8][8][2 * kPanelRows];
};
// Super-block of 256: code q of element 32j + k of row r (q + 4 its GGUF value with the
// third bit) as PanelBlockQ4_1's qs[j] holds nibbles, the scale (minus 32) of its 16
// elements' sub-block i at sc[i][r].
struct PanelBlockQ3_K {
    uint16_t d[kPanelRows];
    int8_t sc[16][kPanelRows];
    uint8_t qs[8][8][2 * kPanelRows];
};
// Super-block of 256: code q (0..3) of element 32j + i of row r at bits 2 (i / 2 % 4) of
// qs[j][i / 8][2r + i % 2] (one 16-byte load of qs[j][H / 2] shifted by 2 (2 (H % 2) + half)
// holds the pairs that PanelBlockQ4_1's group H, half `half` would), and GGUF's byte for
// its 16 elements' sub-block s (scale in the low nibble, min in the high) at sc[s][r].
struct PanelBlockQ2_K {
    uint16_t d[kPanelRows];
    uint16_t dmin[kPanelRows];
    uint8_t sc[16][kPanelRows];
    uint8_t qs[8][4][2 * kPanelRows];
};
// Indices into kMxfp4Values in PanelBlockQ4_1's order; row r's exponent byte at e[r].
struct PanelBlockMXFP4 {
    uint8_t e[kPanelRows];
    uint8_t qs[8][2 * kPanelRows];
};
static_assert(sizeof(PanelBlockQ2_K) == 672 && sizeof(PanelBlockMXFP4) == 136);
static_assert(sizeof(PanelBlockQ3_K) == 1168);
static_assert(sizeof(PanelBlockQ5_0) == 176 && sizeof(PanelBlockQ5_1) == 192 && sizeof(PanelBlockIQ4_NL) == 144 &&
              sizeof(PanelBlockIQ4_XS) == 1104);
static_assert(sizeof(PanelBlockQ4_1) == 160 && sizeof(PanelBlockQ8_0) == 272 && sizeof(PanelBlockQ4_K) == 1184 &&
              sizeof(PanelBlockQ5_K) == 1440 && sizeof(PanelBlockQ6_K) == 1680);

// Which panel block a matrix's panels hold.
enum class PanelLayout { Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS };

class PanelWeights {
public:
    // Whether a matrix of this type and row length can be packed (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
    // IQ4_NL, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS; whole blocks, which GGUF guarantees
    // for these types).
    static bool packable(DType type, int64_t cols);
    // Throws std::invalid_argument when !packable(w.type, w.cols), or when a Q4_0 scale
    // times -8 is not a finite half (a non-finite d or |d| > 8188: no real model's).
    static PanelWeights pack(const TensorView& w);
    // The same into storage[offset, offset + packed_bytes(w)), which the result keeps alive.
    static PanelWeights pack(const TensorView& w, std::shared_ptr<uint8_t[]> storage, size_t offset);
    static size_t packed_bytes(const TensorView& w);  // 0 when !packable(w.type, w.cols)
    // One buffer of huge pages (huge_pages.h) for the packable matrices of `ws`, and each
    // one's offset in it (cache-line aligned; SIZE_MAX for the others), for pack() above.
    static std::shared_ptr<uint8_t[]> storage_for(std::span<const TensorView* const> ws,
                                                  std::vector<size_t>& offsets);

    DType type() const { return type_; }  // the source's
    // Q4_0 and Q4_1 panels hold PanelBlockQ4_1 blocks, the others their own type's.
    PanelLayout layout() const {
        switch (type_) {
        case DType::Q5_0: return PanelLayout::Q5_0;
        case DType::Q5_1: return PanelLayout::Q5_1;
        case DType::Q8_0: return PanelLayout::Q8_0;
        case DType::IQ4_NL: return PanelLayout::IQ4_NL;
        case DType::IQ4_XS: return PanelLayout::IQ4_XS;
        case DType::MXFP4: return PanelLayout::MXFP4;
        case DType::Q2_K: return PanelLayout::Q2_K;
        case DType::Q3_K: return PanelLayout::Q3_K;
        case DType::Q4_K: return PanelLayout::Q4_K;
        case DType::Q5_K: return PanelLayout::Q5_K;
        case DType::Q6_K: return PanelLayout::Q6_K;
        default: return PanelLayout::Q4_1;
        }
    }
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t panels() const { return (rows_ + kPanelRows - 1) / kPanelRows; }
    size_t panel_bytes() const { return panel_bytes_; }
    const uint8_t* panel(int64_t p) const { return data_ + size_t(p) * panel_bytes_; }

    // Row r dequantized from the panels: exactly dequantize_row's values of the source row
    // (for Q4_0 a zero may be +0 where the source gives -0).
    void dequantize_row(int64_t r, float* out) const;

private:
    DType type_ = DType::Q4_1;
    int64_t rows_ = 0, cols_ = 0;
    size_t panel_bytes_ = 0;
    std::shared_ptr<uint8_t[]> storage_;  // shared with other matrices packed into the same buffer
    uint8_t* data_ = nullptr;
};

// The largest code of an activation block: 16-bit codes (the default: float-quality
// activations) or 8-bit ones (BackendOptions::int8_activations, as llama.cpp's Q8_0
// activations round). The contract is the same with either; only the step differs.
constexpr int32_t kPanelCodeLimit16 = 32767;
constexpr int32_t kPanelCodeLimit8 = 127;

// Activation rows quantized as the contract says: codes, and per block d, s and h.
class PanelActivations {
public:
    // Sizes for n_rows rows of `cols` (a multiple of 32) elements, codes up to `limit`
    // (kPanelCodeLimit16 or kPanelCodeLimit8); the storage only grows.
    void resize(int64_t n_rows, int64_t cols, int32_t limit = kPanelCodeLimit16);
    // Quantizes row t from x (cols floats).
    void quantize_row(int64_t t, const float* x);

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int32_t limit() const { return limit_; }
    const int16_t* codes(int64_t t) const { return codes_.data() + size_t(t * cols_); }
    const float* scales(int64_t t) const { return d_.data() + size_t(t * (cols_ / 32)); }
    const float* sums(int64_t t) const { return s_.data() + size_t(t * (cols_ / 32)); }
    // h[t][b][i] at half_sums(t)[2b + i].
    const float* half_sums(int64_t t) const { return h_.data() + size_t(t * (cols_ / 16)); }
    // With 8-bit codes only: the same codes as bytes, and each half block's integer code
    // sum at code_half_sums(t)[2b + i] (for the byte products' offsets).
    const int8_t* codes8(int64_t t) const { return codes8_.data() + size_t(t * cols_); }
    const int32_t* code_half_sums(int64_t t) const { return code_h_.data() + size_t(t * (cols_ / 16)); }

private:
    int64_t rows_ = 0, cols_ = 0;
    int32_t limit_ = kPanelCodeLimit16;
    std::vector<int16_t> codes_;
    std::vector<int8_t> codes8_;
    std::vector<float> d_, s_, h_;
    std::vector<int32_t> code_h_;
};

// y[t * ldy + r] = (row r of w) . (activation row t0 + t) for the rows of panels
// [p_begin, p_end) (those before w.rows()) and t < n_x, in the contract's order.
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy);

// One block of 32 activations quantized to codes up to `limit`: codes, and returns
// {d, s, h} and the halves' integer code sums.
struct PanelBlockScale {
    float d, s;
    float h[2];
    int32_t code_h[2];
};

namespace ref {
PanelBlockScale quantize_panel_block(const float* x, int16_t* codes, int32_t limit = kPanelCodeLimit16);
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy);
} // namespace ref

namespace avx2 {
PanelBlockScale quantize_panel_block(const float* x, int16_t* codes, int32_t limit = kPanelCodeLimit16);
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy);
} // namespace avx2

// The same products with AVX-512 (two panels a register, VNNI's vpdpwssd) and with the
// VEX-encoded AVX-VNNI (AVX2's tiles, vpdpwssd for vpmaddwd plus vpaddd); bit for bit as
// the reference. Run only where isa_supported says so.
// With 8-bit activation codes every set multiplies Q4_0, Q4_1, Q4_K and Q6_K panels with
// byte products (panel_bytes_tile.h): AVX-512's panel_dot through panel_dot_bytes (VNNI's
// vpdpbusd, 64 products an instruction in its tiles), which returns false (and writes
// nothing) for other codes and layouts.
namespace avx512 {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy);
bool panel_dot_bytes(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                     int64_t n_x, float* y, int64_t ldy);
} // namespace avx512
namespace avx_vnni {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy);
} // namespace avx_vnni

} // namespace arbor
