// Packing into panels, the scalar reference of the panel product (panel_weights.h's
// contract) and the dispatch.
#include "arbor/kernels/panel_weights.h"

#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/huge_pages.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"
#include "quant/block_bits.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace arbor {
namespace {

constexpr int64_t kBlock = 32;  // elements per block of every packable type

// A GGUF block of 32 4-bit codes (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL; each of IQ4_XS's
// sub-blocks) has element i in the low nibble of byte i and element i + 16 in the high
// nibble. Panel byte (h, 2r + j) holds elements 4h + j and 4h + j + 2 of row r: for
// h < 4 the low nibbles of source bytes 4h + j and 4h + j + 2, for h >= 4 their high
// nibbles. Whole bytes at a time: packing a 7B model's weights is seconds at start.
void pack_nibbles(const uint8_t* q, int r, uint8_t (&qs)[8][2 * kPanelRows]) {
    for (int h = 0; h < 4; ++h)
        for (int j = 0; j < 2; ++j) {
            const uint8_t a = q[4 * h + j], b = q[4 * h + j + 2];
            qs[h][2 * r + j] = uint8_t((a & 0x0f) | (b << 4));
            qs[h + 4][2 * r + j] = uint8_t((a >> 4) | (b & 0xf0));
        }
}

// The fifth bit of element l (fifth(l): 0 or 1) of a block of 32 of row r, at bit
// 2 (h % 4) + half of qh[h / 4][2r + i] for l = 4h + i + 2 half (the nibbles' order).
template <class Fifth>
void pack_fifth_bits(Fifth fifth, int r, uint8_t (&qh)[2][2 * kPanelRows]) {
    for (int h = 0; h < 8; ++h)
        for (int i = 0; i < 2; ++i)
            for (int half = 0; half < 2; ++half)
                qh[h / 4][2 * r + i] |= uint8_t(fifth(4 * h + i + 2 * half) << (2 * (h % 4) + half));
}

// pack_row(source block, r, panel block) writes row r's share of a panel block, whose
// bytes pack_panels cleared first.
void pack_row(const BlockQ4_1& b, int r, PanelBlockQ4_1& out) {
    out.d[r] = b.d;
    out.m[r] = b.m;
    pack_nibbles(b.qs, r, out.qs);
}

// Q4_0: the same nibbles; d * q - 8d is exactly the GGUF value d * (q - 8).
void pack_row(const BlockQ4_0& b, int r, PanelBlockQ4_1& out) {
    out.d[r] = b.d;
    out.m[r] = fp32_to_fp16(-8.0f * fp16_to_fp32(b.d));
    if (!std::isfinite(fp16_to_fp32(out.m[r])))
        throw std::invalid_argument("PanelWeights: a Q4_0 scale is not finite or too large for -8 d to be a half");
    pack_nibbles(b.qs, r, out.qs);
}

// Q5_0 and Q5_1: element l's fifth bit is bit l of the little-endian qh.
template <class Src, class Dst>
void pack_five_bits(const Src& b, int r, Dst& out) {
    out.d[r] = b.d;
    pack_nibbles(b.qs, r, out.qs);
    const uint32_t qh = quant::load_qh(b.qh);
    pack_fifth_bits([&](int l) { return int((qh >> l) & 1); }, r, out.qh);
}

void pack_row(const BlockQ5_0& b, int r, PanelBlockQ5_0& out) { pack_five_bits(b, r, out); }

void pack_row(const BlockQ5_1& b, int r, PanelBlockQ5_1& out) {
    pack_five_bits(b, r, out);
    out.m[r] = b.m;
}

void pack_row(const BlockIQ4_NL& b, int r, PanelBlockIQ4_NL& out) {
    out.d[r] = b.d;
    pack_nibbles(b.qs, r, out.qs);
}

// MXFP4: IQ4_NL's nibble order, the exponent byte for a scale.
void pack_row(const BlockMXFP4& b, int r, PanelBlockMXFP4& out) {
    out.e[r] = b.e;
    pack_nibbles(b.qs, r, out.qs);
}

// IQ4_XS: sub-block j's 32 codes are bytes 16j .. 16j + 15, laid out as a Q4_1 block's.
void pack_row(const BlockIQ4_XS& b, int r, PanelBlockIQ4_XS& out) {
    out.d[r] = b.d;
    for (int j = 0; j < 8; ++j) {
        out.sc[j][r] = int8_t(quant::iq4_xs_scale(b, j));
        pack_nibbles(b.qs + 16 * j, r, out.qs[j]);
    }
}

void pack_row(const BlockQ8_0& b, int r, PanelBlockQ8_0& out) {
    out.d[r] = b.d;
    for (int g = 0; g < 16; ++g) std::memcpy(&out.qs[g][2 * r], &b.qs[2 * g], 2);
}

// Q4_K and Q5_K's shared fields of row r: sub-block 2g's element l is the low nibble of
// qs[32g + l], sub-block 2g + 1's the high nibble; each sub-block takes Q4_1's panel order.
template <class Src, class Dst>
void pack_k_nibbles(const Src& b, int r, Dst& out) {
    out.d[r] = b.d;
    out.dmin[r] = b.dmin;
    uint8_t sc[8], mn[8];
    quant::unpack_k_scales(b.scales, sc, mn);
    for (int j = 0; j < 8; ++j) {
        out.sc[j][r] = sc[j];
        out.m[j][r] = mn[j];
        const uint8_t* q = b.qs + 32 * (j / 2);
        const int shift = 4 * (j % 2);
        auto e = [&](int k) { return uint8_t((q[k] >> shift) & 0x0f); };
        for (int h = 0; h < 8; ++h)
            for (int jj = 0; jj < 2; ++jj)
                out.qs[j][h][2 * r + jj] = uint8_t(e(4 * h + jj) | (e(4 * h + jj + 2) << 4));
    }
}

void pack_row(const BlockQ4_K& b, int r, PanelBlockQ4_K& out) { pack_k_nibbles(b, r, out); }

// Q5_K: as Q4_K, and sub-block j's element l has its fifth bit at bit j of qh[l].
void pack_row(const BlockQ5_K& b, int r, PanelBlockQ5_K& out) {
    pack_k_nibbles(b, r, out);
    for (int j = 0; j < 8; ++j) pack_fifth_bits([&](int l) { return (b.qh[l] >> j) & 1; }, r, out.qh[j]);
}

// Q6_K: GGUF element 128h + 32u + l (u = 0..3, l < 32) has its low bits in nibble u / 2
// of ql[64h + 32 (u % 2) + l] and its high bits at bit 2u of qh[32h + l].
void pack_row(const BlockQ6_K& b, int r, PanelBlockQ6_K& out) {
    out.d[r] = b.d;
    for (int i = 0; i < 16; ++i) out.sc[i][r] = b.scales[i];
    auto code = [&](int e) {  // 0..63
        const int h = e / 128, u = e % 128 / 32, l = e % 32;
        const int lo = (b.ql[64 * h + 32 * (u % 2) + l] >> (4 * (u / 2))) & 0x0f;
        return lo | (((b.qh[32 * h + l] >> (2 * u)) & 3) << 4);
    };
    for (int j = 0; j < 8; ++j)
        for (int h = 0; h < 8; ++h)
            for (int i = 0; i < 2; ++i)
                for (int half = 0; half < 2; ++half) {
                    const int q = code(32 * j + 4 * h + i + 2 * half);
                    out.ql[j][h][2 * r + i] |= uint8_t((q & 0x0f) << (4 * half));
                    out.qh[j][h % 4][2 * r + i] |= uint8_t((q >> 4) << (4 * (h / 4) + 2 * half));
                }
}

// Q2_K and Q3_K: element e's two low bits at bit 2 (e % 128 / 32) of qs[32 (e / 128) + e % 32].
int two_low_bits(const uint8_t* qs, int e) {
    return (qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
}

// Q3_K: element e's third bit at bit e / 32 of hmask[e % 32] (a clear bit: the code is
// four less); sub-block j's codes plus 4, two per byte as a GGUF Q4_1 block's, packed as
// those are.
void pack_row(const BlockQ3_K& b, int r, PanelBlockQ3_K& out) {
    out.d[r] = b.d;
    int8_t sc[16];
    quant::unpack_q3_k_scales(b.scales, sc);
    for (int i = 0; i < 16; ++i) out.sc[i][r] = sc[i];
    auto code = [&](int e) { return two_low_bits(b.qs, e) | (((b.hmask[e % 32] >> (e / 32)) & 1) << 2); };
    for (int j = 0; j < 8; ++j) {
        uint8_t nibbles[16];
        for (int l = 0; l < 16; ++l) nibbles[l] = uint8_t(code(32 * j + l) | (code(32 * j + l + 16) << 4));
        pack_nibbles(nibbles, r, out.qs[j]);
    }
}

// Q2_K: the codes in PanelBlockQ2_K's order, GGUF's scale-and-min bytes as they are.
void pack_row(const BlockQ2_K& b, int r, PanelBlockQ2_K& out) {
    out.d[r] = b.d;
    out.dmin[r] = b.dmin;
    for (int s = 0; s < 16; ++s) out.sc[s][r] = b.scales[s];
    for (int j = 0; j < 8; ++j)
        for (int i = 0; i < 32; ++i)
            out.qs[j][i / 8][2 * r + i % 2] |= uint8_t(two_low_bits(b.qs, 32 * j + i) << (2 * (i / 2 % 4)));
}

// `blocks` counts the destination's blocks per panel (K-quants: super-blocks). Every byte
// is written: each block is cleared, then rows past the matrix's end stay zero.
template <class Src, class Dst>
void pack_panels(const TensorView& w, int64_t panels, int64_t blocks, uint8_t* out) {
    for (int64_t p = 0; p < panels; ++p) {
        const int rows = int(std::min<int64_t>(kPanelRows, w.rows - p * kPanelRows));
        auto* dst = reinterpret_cast<Dst*>(out) + p * blocks;
        for (int64_t b = 0; b < blocks; ++b) {
            std::memset(&dst[b], 0, sizeof(Dst));
            for (int r = 0; r < rows; ++r)
                pack_row(reinterpret_cast<const Src*>(w.row(p * kPanelRows + r))[b], r, dst[b]);
        }
    }
}

// The contract's view of each layout: code of element k of row r (k counted from the
// row's start), and block b's scale and min of row r (part p of kParts: Q6_K's halves).
struct ScaleMin {
    float d, m;
};

// Element i of a block of 32 in PanelBlockQ4_1's order: its nibble, and its fifth bit in
// PanelBlockQ5_K's order.
int panel_nibble(const uint8_t (&qs)[8][2 * kPanelRows], int r, int i) {
    return (qs[i / 4][2 * r + i % 2] >> (4 * (i / 2 % 2))) & 0x0f;
}
int panel_fifth_bit(const uint8_t (&qh)[2][2 * kPanelRows], int r, int i) {
    const int h = i / 4, half = i / 2 % 2;
    return (qh[h / 4][2 * r + i % 2] >> (2 * (h % 4) + half)) & 1;
}

struct Q4_1Layout {
    using Block = PanelBlockQ4_1;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = true;
    static int code(const Block* blocks, int r, int64_t k) {
        return panel_nibble(blocks[k / kBlock].qs, r, int(k % kBlock));
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) {
        return {fp16_to_fp32(blocks[b].d[r]), fp16_to_fp32(blocks[b].m[r])};
    }
};

// Q5_0 (codes minus 16, no min) and Q5_1.
template <class B, bool HasMin>
struct FiveBitLayout {
    using Block = B;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = HasMin;
    static int code(const Block* blocks, int r, int64_t k) {
        const Block& b = blocks[k / kBlock];
        const int i = int(k % kBlock);
        return (panel_nibble(b.qs, r, i) | (panel_fifth_bit(b.qh, r, i) << 4)) - (HasMin ? 0 : 16);
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) {
        if constexpr (HasMin) return {fp16_to_fp32(blocks[b].d[r]), fp16_to_fp32(blocks[b].m[r])};
        else return {fp16_to_fp32(blocks[b].d[r]), 0.0f};
    }
};
using Q5_0Layout = FiveBitLayout<PanelBlockQ5_0, false>;
using Q5_1Layout = FiveBitLayout<PanelBlockQ5_1, true>;

struct Q8_0Layout {
    using Block = PanelBlockQ8_0;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = false;
    static int code(const Block* blocks, int r, int64_t k) {
        const int i = int(k % kBlock);
        return blocks[k / kBlock].qs[i / 2][2 * r + i % 2];
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) { return {fp16_to_fp32(blocks[b].d[r]), 0.0f}; }
};

// IQ4_NL and MXFP4: a table's value per index, one scale per block (a half, an exponent byte).
float block_scale(const PanelBlockIQ4_NL& b, int r) { return fp16_to_fp32(b.d[r]); }
float block_scale(const PanelBlockMXFP4& b, int r) { return quant::e8m0_half(b.e[r]); }

template <class B, const int8_t (&Values)[16]>
struct TableLayout {
    using Block = B;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = false;
    static int code(const Block* blocks, int r, int64_t k) {
        return Values[panel_nibble(blocks[k / kBlock].qs, r, int(k % kBlock))];
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) { return {block_scale(blocks[b], r), 0.0f}; }
};
using IQ4_NLLayout = TableLayout<PanelBlockIQ4_NL, quant::kIq4NlValues>;
using MXFP4Layout = TableLayout<PanelBlockMXFP4, quant::kMxfp4Values>;

struct IQ4_XSLayout {
    using Block = PanelBlockIQ4_XS;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = false;
    static int code(const Block* blocks, int r, int64_t k) {
        const Block& b = blocks[k / QK_K];
        return quant::kIq4NlValues[panel_nibble(b.qs[int(k % QK_K) / kBlock], r, int(k % kBlock))];
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) {
        const Block& s = blocks[b / 8];
        return {fp16_to_fp32(s.d[r]) * float(s.sc[b % 8][r]), 0.0f};
    }
};

// Q4_K and Q5_K: the low four bits of a code and the sub-block's scale and min.
template <class B>
struct KNibbleLayout {
    using Block = B;
    static constexpr int kParts = 1;
    static constexpr bool kHasMin = true;
    static int nibble(const Block* blocks, int r, int64_t k) {
        return panel_nibble(blocks[k / QK_K].qs[int(k % QK_K) / kBlock], r, int(k % kBlock));
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int) {
        const Block& s = blocks[b / 8];
        const int j = int(b % 8);
        return {fp16_to_fp32(s.d[r]) * float(s.sc[j][r]), -(fp16_to_fp32(s.dmin[r]) * float(s.m[j][r]))};
    }
};

struct Q4_KLayout : KNibbleLayout<PanelBlockQ4_K> {
    static int code(const Block* blocks, int r, int64_t k) { return nibble(blocks, r, k); }
};

struct Q5_KLayout : KNibbleLayout<PanelBlockQ5_K> {
    static int code(const Block* blocks, int r, int64_t k) {
        const int fifth = panel_fifth_bit(blocks[k / QK_K].qh[int(k % QK_K) / kBlock], r, int(k % kBlock));
        return nibble(blocks, r, k) | (fifth << 4);
    }
};

// A scale and a min per half block: dw = D * float(sc & 15), mw = -(Dmin * float(sc >> 4)),
// the very values GGUF dequantizes with.
struct Q2_KLayout {
    using Block = PanelBlockQ2_K;
    static constexpr int kParts = 2;
    static constexpr bool kHasMin = true;
    static int code(const Block* blocks, int r, int64_t k) {
        const int i = int(k % kBlock);
        return (blocks[k / QK_K].qs[int(k % QK_K) / kBlock][i / 8][2 * r + i % 2] >> (2 * (i / 2 % 4))) & 3;
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int part) {
        const Block& s = blocks[b / 8];
        const uint8_t sc = s.sc[2 * (b % 8) + part][r];
        return {fp16_to_fp32(s.d[r]) * float(sc & 0x0f), -(fp16_to_fp32(s.dmin[r]) * float(sc >> 4))};
    }
};

struct Q3_KLayout {
    using Block = PanelBlockQ3_K;
    static constexpr int kParts = 2;
    static constexpr bool kHasMin = false;
    static int code(const Block* blocks, int r, int64_t k) {
        return panel_nibble(blocks[k / QK_K].qs[int(k % QK_K) / kBlock], r, int(k % kBlock)) - 4;
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int part) {
        const Block& s = blocks[b / 8];
        return {fp16_to_fp32(s.d[r]) * float(s.sc[2 * (b % 8) + part][r]), 0.0f};
    }
};

struct Q6_KLayout {
    using Block = PanelBlockQ6_K;
    static constexpr int kParts = 2;
    static constexpr bool kHasMin = false;
    static int code(const Block* blocks, int r, int64_t k) {
        const Block& b = blocks[k / QK_K];
        const int j = int(k % QK_K) / kBlock, i = int(k % kBlock);
        const int h = i / 4, half = i / 2 % 2;
        const int lo = (b.ql[j][h][2 * r + i % 2] >> (4 * half)) & 0x0f;
        const int hi = (b.qh[j][h % 4][2 * r + i % 2] >> (4 * (h / 4) + 2 * half)) & 3;
        return (lo | (hi << 4)) - 32;
    }
    static ScaleMin scale(const Block* blocks, int r, int64_t b, int part) {
        const Block& s = blocks[b / 8];
        return {fp16_to_fp32(s.d[r]) * float(s.sc[2 * (b % 8) + part][r]), 0.0f};
    }
};

// The contract's fold for one (weight row, activation row) pair.
template <class L>
float contract_dot(const uint8_t* panel, int r, const PanelActivations& x, int64_t t) {
    const auto* blocks = reinterpret_cast<const typename L::Block*>(panel);
    const int16_t* c = x.codes(t);
    float acc = 0.0f;
    constexpr int64_t kPart = kBlock / L::kParts;
    for (int64_t b = 0; b < x.cols() / kBlock; ++b) {
        for (int part = 0; part < L::kParts; ++part) {
            int32_t n = 0;
            for (int64_t k = b * kBlock + part * kPart; k < b * kBlock + (part + 1) * kPart; ++k)
                n += L::code(blocks, r, k) * int32_t(c[k]);
            acc = std::fma(float(n), L::scale(blocks, r, b, part).d * x.scales(t)[b], acc);
            // A min per part (Q2_K) weighs that part's sum.
            if constexpr (L::kHasMin && L::kParts == 2)
                acc = std::fma(L::scale(blocks, r, b, part).m, x.half_sums(t)[2 * b + part], acc);
        }
        if constexpr (L::kHasMin && L::kParts == 1) acc = std::fma(L::scale(blocks, r, b, 0).m, x.sums(t)[b], acc);
    }
    return acc;
}

// Element k is d * q + m: for Q4_K and Q5_K exactly GGUF's d1 * q - m1, for Q6_K its (d * sc) * q.
template <class L>
void dequantize_from(const uint8_t* panel, int r, int64_t cols, float* out) {
    const auto* blocks = reinterpret_cast<const typename L::Block*>(panel);
    for (int64_t k = 0; k < cols; ++k) {
        const ScaleMin s = L::scale(blocks, r, k / kBlock, int(k % kBlock) / (kBlock / L::kParts));
        const float v = s.d * float(L::code(blocks, r, k));
        out[k] = L::kHasMin ? v + s.m : v;
    }
}

// f.template operator()<L>() for the layout of w's panels.
template <class F>
decltype(auto) with_layout(PanelLayout layout, F&& f) {
    switch (layout) {
    case PanelLayout::Q5_0: return f.template operator()<Q5_0Layout>();
    case PanelLayout::Q5_1: return f.template operator()<Q5_1Layout>();
    case PanelLayout::Q8_0: return f.template operator()<Q8_0Layout>();
    case PanelLayout::IQ4_NL: return f.template operator()<IQ4_NLLayout>();
    case PanelLayout::IQ4_XS: return f.template operator()<IQ4_XSLayout>();
    case PanelLayout::MXFP4: return f.template operator()<MXFP4Layout>();
    case PanelLayout::Q2_K: return f.template operator()<Q2_KLayout>();
    case PanelLayout::Q3_K: return f.template operator()<Q3_KLayout>();
    case PanelLayout::Q4_K: return f.template operator()<Q4_KLayout>();
    case PanelLayout::Q5_K: return f.template operator()<Q5_KLayout>();
    case PanelLayout::Q6_K: return f.template operator()<Q6_KLayout>();
    case PanelLayout::Q4_1: break;
    }
    return f.template operator()<Q4_1Layout>();
}

} // namespace

bool PanelWeights::packable(DType type, int64_t cols) {
    switch (type) {
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::IQ4_XS:
        return cols > 0 && cols % QK_K == 0;
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0: case DType::IQ4_NL:
    case DType::MXFP4:
        return cols > 0 && cols % kBlock == 0;
    default: return false;
    }
}

namespace {
size_t panel_bytes_of(const TensorView& w) {
    if (w.type == DType::Q4_K) return size_t(w.cols / QK_K) * sizeof(PanelBlockQ4_K);
    if (w.type == DType::Q5_K) return size_t(w.cols / QK_K) * sizeof(PanelBlockQ5_K);
    if (w.type == DType::Q6_K) return size_t(w.cols / QK_K) * sizeof(PanelBlockQ6_K);
    if (w.type == DType::IQ4_XS) return size_t(w.cols / QK_K) * sizeof(PanelBlockIQ4_XS);
    if (w.type == DType::Q3_K) return size_t(w.cols / QK_K) * sizeof(PanelBlockQ3_K);
    if (w.type == DType::Q2_K) return size_t(w.cols / QK_K) * sizeof(PanelBlockQ2_K);
    const size_t block_bytes = w.type == DType::Q8_0     ? sizeof(PanelBlockQ8_0)
                               : w.type == DType::Q5_0   ? sizeof(PanelBlockQ5_0)
                               : w.type == DType::Q5_1   ? sizeof(PanelBlockQ5_1)
                               : w.type == DType::IQ4_NL ? sizeof(PanelBlockIQ4_NL)
                               : w.type == DType::MXFP4  ? sizeof(PanelBlockMXFP4)
                                                         : sizeof(PanelBlockQ4_1);
    return size_t(w.cols / kBlock) * block_bytes;
}
} // namespace

size_t PanelWeights::packed_bytes(const TensorView& w) {
    if (!packable(w.type, w.cols)) return 0;
    return size_t((w.rows + kPanelRows - 1) / kPanelRows) * panel_bytes_of(w);
}

PanelWeights PanelWeights::pack(const TensorView& w) {
    if (!packable(w.type, w.cols)) throw std::invalid_argument("PanelWeights: type or row length cannot be packed");
    return pack(w, std::shared_ptr<uint8_t[]>(new uint8_t[packed_bytes(w)]), 0);
}

PanelWeights PanelWeights::pack(const TensorView& w, std::shared_ptr<uint8_t[]> storage, size_t offset) {
    if (!packable(w.type, w.cols)) throw std::invalid_argument("PanelWeights: type or row length cannot be packed");
    PanelWeights out;
    out.type_ = w.type;
    out.rows_ = w.rows;
    out.cols_ = w.cols;
    const int64_t blocks = w.cols / kBlock, super_blocks = w.cols / QK_K;
    out.panel_bytes_ = panel_bytes_of(w);
    out.storage_ = std::move(storage);
    out.data_ = out.storage_.get() + offset;
    if (w.type == DType::Q4_0) pack_panels<BlockQ4_0, PanelBlockQ4_1>(w, out.panels(), blocks, out.data_);
    else if (w.type == DType::Q4_1) pack_panels<BlockQ4_1, PanelBlockQ4_1>(w, out.panels(), blocks, out.data_);
    else if (w.type == DType::Q4_K) pack_panels<BlockQ4_K, PanelBlockQ4_K>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::Q5_K) pack_panels<BlockQ5_K, PanelBlockQ5_K>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::Q6_K) pack_panels<BlockQ6_K, PanelBlockQ6_K>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::Q3_K) pack_panels<BlockQ3_K, PanelBlockQ3_K>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::Q2_K) pack_panels<BlockQ2_K, PanelBlockQ2_K>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::IQ4_XS) pack_panels<BlockIQ4_XS, PanelBlockIQ4_XS>(w, out.panels(), super_blocks, out.data_);
    else if (w.type == DType::Q5_0) pack_panels<BlockQ5_0, PanelBlockQ5_0>(w, out.panels(), blocks, out.data_);
    else if (w.type == DType::Q5_1) pack_panels<BlockQ5_1, PanelBlockQ5_1>(w, out.panels(), blocks, out.data_);
    else if (w.type == DType::IQ4_NL) pack_panels<BlockIQ4_NL, PanelBlockIQ4_NL>(w, out.panels(), blocks, out.data_);
    else if (w.type == DType::MXFP4) pack_panels<BlockMXFP4, PanelBlockMXFP4>(w, out.panels(), blocks, out.data_);
    else pack_panels<BlockQ8_0, PanelBlockQ8_0>(w, out.panels(), blocks, out.data_);
    return out;
}

std::shared_ptr<uint8_t[]> PanelWeights::storage_for(std::span<const TensorView* const> ws,
                                                     std::vector<size_t>& offsets) {
    offsets.assign(ws.size(), SIZE_MAX);
    size_t total = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
        const size_t bytes = packed_bytes(*ws[i]);
        if (bytes == 0) continue;
        offsets[i] = total;
        total += (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
    }
    return allocate_huge_pages(total);
}

void PanelWeights::dequantize_row(int64_t r, float* out) const {
    const uint8_t* p = panel(r / kPanelRows);
    const int lane = int(r % kPanelRows);
    with_layout(layout(), [&]<class L>() { dequantize_from<L>(p, lane, cols_, out); });
}

void PanelActivations::resize(int64_t n_rows, int64_t cols, int32_t limit) {
    if (cols % kBlock != 0) throw std::invalid_argument("PanelActivations: row length is not whole blocks");
    if (limit != kPanelCodeLimit16 && limit != kPanelCodeLimit8)
        throw std::invalid_argument("PanelActivations: codes are 16 or 8 bits");
    rows_ = n_rows;
    cols_ = cols;
    limit_ = limit;
    // Grown only: the forward pass alternates between row lengths, and shrinking then
    // growing a vector zero-fills the regrown part every time.
    const size_t codes = size_t(n_rows * cols), blocks = size_t(n_rows * (cols / kBlock));
    if (codes_.size() < codes) codes_.resize(codes);
    if (limit == kPanelCodeLimit8 && codes8_.size() < codes) codes8_.resize(codes);
    if (d_.size() < blocks) {
        d_.resize(blocks);
        s_.resize(blocks);
        h_.resize(2 * blocks);
    }
    if (limit == kPanelCodeLimit8 && code_h_.size() < 2 * blocks) code_h_.resize(2 * blocks);
}

void PanelActivations::quantize_row(int64_t t, const float* x) {
    const auto quantize = avx2::available() ? avx2::quantize_panel_block : ref::quantize_panel_block;
    const int64_t blocks = cols_ / kBlock;
    for (int64_t b = 0; b < blocks; ++b) {
        int16_t* codes = codes_.data() + size_t(t * cols_ + b * kBlock);
        const PanelBlockScale scale = quantize(x + b * kBlock, codes, limit_);
        const size_t at = size_t(t * blocks + b);
        d_[at] = scale.d;
        s_[at] = scale.s;
        h_[2 * at] = scale.h[0];
        h_[2 * at + 1] = scale.h[1];
        if (limit_ != kPanelCodeLimit8) continue;
        for (int64_t k = 0; k < kBlock; ++k) codes8_[size_t(t * cols_ + b * kBlock + k)] = int8_t(codes[k]);
        code_h_[2 * at] = scale.code_h[0];
        code_h_[2 * at + 1] = scale.code_h[1];
    }
}

namespace ref {
PanelBlockScale quantize_panel_block(const float* x, int16_t* codes, int32_t limit) {
    float a = 0.0f;
    for (int k = 0; k < kBlock; ++k) a = std::max(a, std::fabs(x[k]));
    const float d = a / float(limit);
    const float inv = d > 0.0f ? 1.0f / d : 0.0f;
    int32_t half[2] = {};
    for (int k = 0; k < kBlock; ++k) {
        // nearbyint rounds ties to even in the default rounding mode.
        codes[k] = int16_t(std::nearbyint(x[k] * inv));
        half[k / 16] += codes[k];
    }
    return {d, d * float(half[0] + half[1]), {d * float(half[0]), d * float(half[1])}, {half[0], half[1]}};
}

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    for (int64_t r = p_begin * kPanelRows; r < std::min(p_end * kPanelRows, w.rows()); ++r) {
        const uint8_t* panel = w.panel(r / kPanelRows);
        const int lane = int(r % kPanelRows);
        with_layout(w.layout(), [&]<class L>() {
            for (int64_t t = 0; t < n_x; ++t) y[t * ldy + r] = contract_dot<L>(panel, lane, x, t0 + t);
        });
    }
}
} // namespace ref

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    using Fn = void (*)(const PanelWeights&, int64_t, int64_t, const PanelActivations&, int64_t, int64_t, float*,
                        int64_t);
    static const Fn best = isa_supported(Isa::Avx512)    ? avx512::panel_dot
                           : isa_supported(Isa::AvxVnni) ? avx_vnni::panel_dot
                           : avx2::available()           ? avx2::panel_dot
                                                         : ref::panel_dot;
    best(w, p_begin, p_end, x, t0, n_x, y, ldy);
}

} // namespace arbor
