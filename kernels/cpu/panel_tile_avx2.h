// The 256-bit pieces of the panel products, shared by the ISA units that include this
// header (panel_dot_avx2.cpp, panel_dot_avx512.cpp, panel_dot_avx_vnni.cpp), each built with
// its own flags: per layout, how a block's codes widen to 16-bit pairs and its scales and
// mins to floats; and the tile of MR activation rows x NV panels, generic in how a vector of
// code pairs is multiplied into the integer sums (`Dot`: vpmaddwd plus vpaddd, or one VNNI
// vpdpwssd; the sums are exact integers either way, so every Dot gives the same bits).
// Everything here has internal linkage (an unnamed namespace), so each unit keeps the
// encoding of its own flags: with external linkage the linker could hand an AVX-512
// encoding to the AVX2 path.
#pragma once

#if !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#error "panel_tile_avx2.h needs -mavx2 -mfma -mf16c"
#endif

#include "arbor/kernels/panel_weights.h"
#include "quant/block_bits.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace arbor::panel_simd {
namespace {

inline __m256 halves(const uint16_t (&h)[kPanelRows]) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

inline __m256i widen_u8(const uint8_t* p) {
    return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256i widen_i8(const int8_t* p) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 bytes_as_floats(const uint8_t (&b)[kPanelRows]) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b))));
}
inline __m256 signed_bytes_as_floats(const int8_t (&b)[kPanelRows]) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b))));
}

// Each layout: codes(p, b), where the codes of 32-block b of the panel at p are;
// half<H, 0>(codes) / half<H, 1>(codes), the eight rows' code pairs of elements
// (4H, 4H + 1) / (4H + 2, 4H + 3) as 16-bit lanes (row r in lanes 2r, 2r + 1), each
// widening its own load so that only one is held in registers at a time; dw(p, b, part)
// and mw(p, b, part), the block's scales and mins (of part `part` of kParts) as the
// contract defines them. kBlockBytes: a 32-block's share of the panel's bytes.
struct Q4_1P {
    using Block = PanelBlockQ4_1;
    using Codes = const uint8_t*;
    static constexpr bool kHasMin = true;
    static constexpr int kParts = 1;
    static constexpr size_t kBlockBytes = sizeof(Block);
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b].qs[0]; }
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        const __m256i w = widen_u8(q + 16 * H);
        return Half == 0 ? _mm256_and_si256(w, _mm256_set1_epi16(0x0f)) : _mm256_srli_epi16(w, 4);
    }
    static __m256 dw(const Block* p, int64_t b, int) { return halves(p[b].d); }
    static __m256 mw(const Block* p, int64_t b, int) { return halves(p[b].m); }
};

// The four-bit codes with the fifth bit (16) shifted in beside them: `lo` in Q4_1's
// order, `hi` in PanelBlockQ5_K's (per block of 32).
struct NibblesAndBits {
    const uint8_t* lo;
    const uint8_t* hi;
};
template <int H, int Half>
inline __m256i five_bit_codes(NibblesAndBits q) {
    const __m256i lo = Q4_1P::half<H, Half>(q.lo);
    const __m256i h = widen_u8(q.hi + 16 * (H / 4));
    constexpr int kBit = 2 * (H % 4) + Half;  // to bring to bit 4
    const __m256i hi = kBit >= 4 ? _mm256_srli_epi16(h, kBit - 4) : _mm256_slli_epi16(h, 4 - kBit);
    return _mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi16(0x10)));
}

// Q5_0: codes minus 16 and no min; Q5_1: the codes and Q4_1's min.
template <class B, bool HasMin>
struct FiveBitP {
    using Block = B;
    using Codes = NibblesAndBits;
    static constexpr bool kHasMin = HasMin;
    static constexpr int kParts = 1;
    static constexpr size_t kBlockBytes = sizeof(Block);
    static Codes codes(const Block* p, int64_t b) { return {p[b].qs[0], p[b].qh[0]}; }
    template <int H, int Half>
    static __m256i half(Codes q) {
        const __m256i c = five_bit_codes<H, Half>(q);
        return HasMin ? c : _mm256_sub_epi16(c, _mm256_set1_epi16(16));
    }
    static __m256 dw(const Block* p, int64_t b, int) { return halves(p[b].d); }
    static __m256 mw(const Block* p, int64_t b, int) {
        if constexpr (HasMin) return halves(p[b].m);
        else return _mm256_setzero_ps();
    }
};
using Q5_0P = FiveBitP<PanelBlockQ5_0, false>;
using Q5_1P = FiveBitP<PanelBlockQ5_1, true>;

// A 16-entry table's values (IQ4_NL's, MXFP4's) of the indices in Q4_1's order: each
// byte's index looked up with pshufb (the table fills one register), then widened with
// its sign.
template <int H, int Half>
inline __m256i table_codes(const int8_t (&values)[16], const uint8_t* q) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values));
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * H));
    const __m128i index = _mm_and_si128(Half == 0 ? bytes : _mm_srli_epi16(bytes, 4), _mm_set1_epi8(0x0f));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(table, index));
}

// IQ4_NL, IQ4_XS and MXFP4: table values, no min.
template <const int8_t (&Values)[16]>
struct TableCodesP {
    using Codes = const uint8_t*;
    static constexpr bool kHasMin = false;
    static constexpr int kParts = 1;
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        return table_codes<H, Half>(Values, q);
    }
    template <class Block>
    static __m256 mw(const Block*, int64_t, int) {
        return _mm256_setzero_ps();
    }
};

struct IQ4_NLP : TableCodesP<quant::kIq4NlValues> {
    using Block = PanelBlockIQ4_NL;
    static constexpr size_t kBlockBytes = sizeof(Block);
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b].qs[0]; }
    static __m256 dw(const Block* p, int64_t b, int) { return halves(p[b].d); }
};

// Per sub-block of a super-block of 256; dw = D * sc, an exact product.
struct IQ4_XSP : TableCodesP<quant::kIq4NlValues> {
    using Block = PanelBlockIQ4_XS;
    static constexpr size_t kBlockBytes = sizeof(Block) / 8;
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b / 8].qs[b % 8][0]; }
    static __m256 dw(const Block* p, int64_t b, int) {
        return _mm256_mul_ps(halves(p[b / 8].d), signed_bytes_as_floats(p[b / 8].sc[b % 8]));
    }
};

// GGUF's e8m0_half of each row's exponent byte: 2^(e - 128), built in the exponent field
// ((e - 1) << 23), or as a subnormal for e < 2 (0x00200000 << e).
inline __m256 e8m0_halves(const uint8_t (&e)[kPanelRows]) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(e)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
    const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), v);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
}

struct MXFP4P : TableCodesP<quant::kMxfp4Values> {
    using Block = PanelBlockMXFP4;
    static constexpr size_t kBlockBytes = sizeof(Block);
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b].qs[0]; }
    static __m256 dw(const Block* p, int64_t b, int) { return e8m0_halves(p[b].e); }
};

struct Q8_0P {
    using Block = PanelBlockQ8_0;
    using Codes = const uint8_t*;
    static constexpr bool kHasMin = false;
    static constexpr int kParts = 1;
    static constexpr size_t kBlockBytes = sizeof(Block);
    static const uint8_t* codes(const Block* p, int64_t b) { return reinterpret_cast<const uint8_t*>(p[b].qs[0]); }
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        return widen_i8(reinterpret_cast<const int8_t*>(q) + 16 * (2 * H + Half));
    }
    static __m256 dw(const Block* p, int64_t b, int) { return halves(p[b].d); }
    static __m256 mw(const Block*, int64_t, int) { return _mm256_setzero_ps(); }
};

// Sub-blocks in Q4_1's order; dw = D * sc and mw = -(Dmin * m), exact products.
template <class B>
struct KScalesP {
    using Block = B;
    static constexpr bool kHasMin = true;
    static constexpr int kParts = 1;
    static constexpr size_t kBlockBytes = sizeof(Block) / 8;
    static __m256 dw(const Block* p, int64_t b, int) {
        return _mm256_mul_ps(halves(p[b / 8].d), bytes_as_floats(p[b / 8].sc[b % 8]));
    }
    static __m256 mw(const Block* p, int64_t b, int) {
        const __m256 m = _mm256_mul_ps(halves(p[b / 8].dmin), bytes_as_floats(p[b / 8].m[b % 8]));
        return _mm256_xor_ps(m, _mm256_set1_ps(-0.0f));
    }
};

struct Q4_KP : KScalesP<PanelBlockQ4_K> {
    using Codes = const uint8_t*;
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b / 8].qs[b % 8][0]; }
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        return Q4_1P::half<H, Half>(q);
    }
};

// Q4_K's nibbles with the fifth bit shifted in beside them.
struct Q5_KP : KScalesP<PanelBlockQ5_K> {
    using Codes = NibblesAndBits;
    static Codes codes(const Block* p, int64_t b) { return {p[b / 8].qs[b % 8][0], p[b / 8].qh[b % 8][0]}; }
    template <int H, int Half>
    static __m256i half(Codes q) {
        return five_bit_codes<H, Half>(q);
    }
};

// Super-blocks whose 32-blocks' codes are qs[j], one array each.
template <class B>
struct SubBlockCodes {
    using Block = B;
    using Codes = const uint8_t*;
    static constexpr size_t kBlockBytes = sizeof(Block) / 8;
    static const uint8_t* codes(const Block* p, int64_t b) { return p[b / 8].qs[b % 8][0]; }
};

// Four codes a byte: group H's pairs are bits 2 (2 (H % 2) + Half) of qs[H / 2]. The two
// halves of a block (groups 0-3 and 4-7) have their own scales and mins, GGUF's nibbles
// times the super-block's d and dmin.
struct Q2_KP : SubBlockCodes<PanelBlockQ2_K> {
    static constexpr bool kHasMin = true;
    static constexpr int kParts = 2;
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        const __m256i w = widen_u8(q + 16 * (H / 2));
        return _mm256_and_si256(_mm256_srli_epi16(w, 2 * (2 * (H % 2) + Half)), _mm256_set1_epi16(3));
    }
    static __m256i scale_bytes(const Block* p, int64_t b, int part) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p[b / 8].sc[2 * (b % 8) + part])));
    }
    static __m256 dw(const Block* p, int64_t b, int part) {
        const __m256i sc = _mm256_and_si256(scale_bytes(p, b, part), _mm256_set1_epi32(0x0f));
        return _mm256_mul_ps(halves(p[b / 8].d), _mm256_cvtepi32_ps(sc));
    }
    static __m256 mw(const Block* p, int64_t b, int part) {
        const __m256i m = _mm256_srli_epi32(scale_bytes(p, b, part), 4);
        const __m256 ml = _mm256_mul_ps(halves(p[b / 8].dmin), _mm256_cvtepi32_ps(m));
        return _mm256_xor_ps(ml, _mm256_set1_ps(-0.0f));
    }
};

// Codes plus 4 as Q4_1's nibbles; the two halves of a block (groups 0-3 and 4-7) have
// their own scales.
struct Q3_KP : SubBlockCodes<PanelBlockQ3_K> {
    static constexpr bool kHasMin = false;
    static constexpr int kParts = 2;
    template <int H, int Half>
    static __m256i half(const uint8_t* q) {
        return _mm256_sub_epi16(Q4_1P::half<H, Half>(q), _mm256_set1_epi16(4));
    }
    static __m256 dw(const Block* p, int64_t b, int part) {
        return _mm256_mul_ps(halves(p[b / 8].d), signed_bytes_as_floats(p[b / 8].sc[2 * (b % 8) + part]));
    }
    static __m256 mw(const Block*, int64_t, int) { return _mm256_setzero_ps(); }
};

// Low nibbles as Q4_1's, the high two bits shifted in beside them, minus 32; the two
// halves of a block (groups 0-3 and 4-7) have their own scales.
struct Q6_KP {
    using Block = PanelBlockQ6_K;
    using Codes = NibblesAndBits;
    static constexpr bool kHasMin = false;
    static constexpr int kParts = 2;
    static constexpr size_t kBlockBytes = sizeof(Block) / 8;
    static Codes codes(const Block* p, int64_t b) { return {p[b / 8].ql[b % 8][0], p[b / 8].qh[b % 8][0]}; }
    template <int H, int Half>
    static __m256i half(Codes q) {
        const __m256i lo = Q4_1P::half<H, Half>(q.lo);
        const __m256i h = widen_u8(q.hi + 16 * (H % 4));
        constexpr int kShift = 4 * (H / 4) + 2 * Half;  // of the two bits, to bring to bit 4
        const __m256i hi = kShift >= 4 ? _mm256_srli_epi16(h, kShift - 4) : _mm256_slli_epi16(h, 4 - kShift);
        return _mm256_sub_epi16(_mm256_or_si256(lo, _mm256_and_si256(hi, _mm256_set1_epi16(0x30))),
                                _mm256_set1_epi16(32));
    }
    static __m256 dw(const Block* p, int64_t b, int part) {
        return _mm256_mul_ps(halves(p[b / 8].d), signed_bytes_as_floats(p[b / 8].sc[2 * (b % 8) + part]));
    }
    static __m256 mw(const Block*, int64_t, int) { return _mm256_setzero_ps(); }
};

inline __m256i code_pair(const int16_t* c) {
    int32_t pair;
    std::memcpy(&pair, c, sizeof pair);
    return _mm256_set1_epi32(pair);
}

// Rows of the panel that exist: all eight except in a matrix's last panel.
inline void store_rows(float* y, __m256 v, int rows) {
    if (rows >= kPanelRows) {
        _mm256_storeu_ps(y, v);
        return;
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(y, _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), lane), v);
}

// A tile's activation rows: codes, block scales and sums (per block, or per half block
// where a part has its own min: Q2_K).
template <class T, int MR>
struct TileRows {
    const int16_t* c[MR];
    const float* d[MR];
    const float* s[MR];
    TileRows(const PanelActivations& x, int64_t t0) {
        for (int t = 0; t < MR; ++t) {
            c[t] = x.codes(t0 + t);
            d[t] = x.scales(t0 + t);
            s[t] = T::kParts == 2 ? x.half_sums(t0 + t) : x.sums(t0 + t);
        }
    }
};

// A tile's NV consecutive panels, panel_bytes apart.
template <class T, int NV>
struct TilePanels {
    const typename T::Block* p[NV];
    size_t panel_bytes;
    TilePanels(const uint8_t* panel, size_t bytes) : panel_bytes(bytes) {
        for (int v = 0; v < NV; ++v) p[v] = reinterpret_cast<const typename T::Block*>(panel + v * bytes);
    }
    const typename T::Block* operator[](int v) const { return p[v]; }
    // Block b of the next NV panels (the next tile's, usually): streaming from memory, a
    // single activation row otherwise waits on the weights. A prefetch past the end is
    // harmless.
    void prefetch_next(int64_t b) const {
        for (int v = 0; v < NV; ++v) {
            const char* ahead = reinterpret_cast<const char*>(p[v]) + NV * panel_bytes + b * T::kBlockBytes;
            for (size_t at = 0; at < T::kBlockBytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            _mm_prefetch(ahead + T::kBlockBytes - 1, _MM_HINT_T0);
        }
    }
};

// A block's steps in the contract's order: both halves of groups 0-7 (half.template
// operator()<G, Half>()), the first part's sums folded after group 3 where a block has two
// parts, the last part's after group 7.
template <class T, class HalfStep, class Fold>
inline void block_steps(HalfStep& half, Fold& fold) {
    auto group = [&]<int G>() {
        half.template operator()<G, 0>();
        half.template operator()<G, 1>();
        if constexpr (T::kParts == 2 && G == 3) fold(0);
    };
    [&]<int... G>(std::integer_sequence<int, G...>) {
        (group.template operator()<G>(), ...);
    }(std::make_integer_sequence<int, 8>{});
    fold(T::kParts - 1);
}

// The integer products of the AVX2 set: vpmaddwd, then vpaddd into the sums.
struct MaddAdd {
    static __m256i dot(__m256i sums, __m256i codes, __m256i x) {
        return _mm256_add_epi32(sums, _mm256_madd_epi16(codes, x));
    }
};

// MR activation rows (from t0) against NV consecutive panels (the first at `panel`, the
// rest panel_bytes apart); `rows` counts the weight rows that exist from the first.
// The tile keeps MR * NV integer accumulators for the current block (eight rows' sums of
// code products each) and as many float accumulators across blocks; each vector of
// weight codes is widened once for the MR rows.

template <class T, class Dot, int MR, int NV>
void tile(int64_t blocks, const uint8_t* panel, size_t panel_bytes, const PanelActivations& x, int64_t t0, float* y,
          int64_t ldy, int64_t rows) {
    // Eight float accumulators do not fit in registers beside the eight integer ones and
    // the codes: the 4 x 2 tile keeps them in memory, touched once per block (with both in
    // registers the compiler spilled the integer sums in every group: 1.2x slower).
    constexpr bool kInMemory = MR * NV >= 8;
    alignas(32) float accf[MR][NV][8] = {};
    __m256 accr[MR][NV];
    for (auto& row : accr)
        for (auto& a : row) a = _mm256_setzero_ps();
    const TileRows<T, MR> r(x, t0);
    // Plain references, not a structured binding: Clang 14 cannot capture one in a lambda.
    const auto& c = r.c;
    const auto& d = r.d;
    const auto& s = r.s;
    const TilePanels<T, NV> pv(panel, panel_bytes);

    for (int64_t b = 0; b < blocks; ++b) {
        pv.prefetch_next(b);
        __m256i n[MR][NV];
        for (auto& row : n)
            for (auto& a : row) a = _mm256_setzero_si256();
        const int64_t at = b * 32;
        // One half of group G: its code pairs times each row's activation pair.
        typename T::Codes q[NV];
        for (int v = 0; v < NV; ++v) q[v] = T::codes(pv[v], b);
        auto half = [&]<int G, int Half>() {
            __m256i w[NV];
            for (int v = 0; v < NV; ++v) w[v] = T::template half<G, Half>(q[v]);
            for (int t = 0; t < MR; ++t) {
                const __m256i xc = code_pair(c[t] + at + 4 * G + 2 * Half);
                for (int v = 0; v < NV; ++v) n[t][v] = Dot::dot(n[t][v], w[v], xc);
            }
            // Keeps the sums in registers between halves: left free, the compiler moves a
            // block's products ahead of their sums and spills them (measured 1.5x slower).
            for (auto& row : n)
                for (auto& a : row) asm("" : "+x"(a));
        };
        // The sums of part `part` of the block folded into the float accumulators.
        auto fold = [&](int part) {
            for (int v = 0; v < NV; ++v) {
                const __m256 dw = T::dw(pv[v], b, part);
                const __m256 mw = T::mw(pv[v], b, part);
                for (int t = 0; t < MR; ++t) {
                    __m256 acc = kInMemory ? _mm256_load_ps(accf[t][v]) : accr[t][v];
                    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(n[t][v]), _mm256_mul_ps(dw, _mm256_set1_ps(d[t][b])), acc);
                    if constexpr (T::kHasMin)
                        acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(s[t][T::kParts * b + part]), acc);
                    if constexpr (kInMemory) _mm256_store_ps(accf[t][v], acc);
                    else accr[t][v] = acc;
                    n[t][v] = _mm256_setzero_si256();
                }
            }
        };
        block_steps<T>(half, fold);
        // Keeps accf in memory: left free, the compiler promotes it to registers again.
        if constexpr (kInMemory) asm volatile("" : : "r"(&accf[0][0][0]) : "memory");
    }
    for (int t = 0; t < MR; ++t)
        for (int v = 0; v < NV; ++v)
            store_rows(y + t * ldy + v * kPanelRows, kInMemory ? _mm256_load_ps(accf[t][v]) : accr[t][v],
                       int(rows - int64_t(v) * kPanelRows));
}

// One activation row (t) against panels [p_begin, p_end) one at a time, in memory order:
// a decode row's products then read the weights as one sequential stream, as GGUF's row
// order would, where a tile of NV panels reads NV streams side by side. One chat's decode
// on a 1B Q4_K_M model (Zen 4, 2 threads, alternating builds): 37.6-40.4 tokens/s with
// 1 x 4-panel tiles, 47.3-55.6 as one stream.
// A block's sums go into four chains (by group and half) added at its fold: integer sums,
// so the bits are the contract's, and no chain waits on one long series of products.
// How far ahead of its block row_stream asks for the weights: on the same machine and
// model 4 KiB gave 48.4-51.9 tokens/s, 1 KiB 48.9-51.4, 8 KiB 47.4-49.9, 16 KiB 42.7-46.3,
// none 33.3-34.9.
constexpr size_t kStreamAhead = 4096;

template <class T, class Dot>
void row_stream(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t,
                float* y) {
    const int64_t blocks = w.cols() / 32;
    const TileRows<T, 1> r(x, t);
    for (int64_t p = p_begin; p < p_end; ++p) {
        const typename T::Block* pv = reinterpret_cast<const typename T::Block*>(w.panel(p));
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            const char* ahead = reinterpret_cast<const char*>(pv) + b * T::kBlockBytes + kStreamAhead;
            for (size_t at = 0; at < T::kBlockBytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            __m256i n[2][2] = {};
            const typename T::Codes q = T::codes(pv, b);
            const int16_t* c = r.c[0] + b * 32;
            auto half = [&]<int G, int Half>() {
                n[G % 2][Half] = Dot::dot(n[G % 2][Half], T::template half<G, Half>(q), code_pair(c + 4 * G + 2 * Half));
            };
            auto fold = [&](int part) {
                const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(n[0][0], n[0][1]), _mm256_add_epi32(n[1][0], n[1][1]));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(T::dw(pv, b, part), _mm256_set1_ps(r.d[0][b])),
                                      acc);
                if constexpr (T::kHasMin)
                    acc = _mm256_fmadd_ps(T::mw(pv, b, part), _mm256_set1_ps(r.s[0][T::kParts * b + part]), acc);
                for (auto& chains : n)
                    for (auto& chain : chains) chain = _mm256_setzero_si256();
            };
            block_steps<T>(half, fold);
        }
        store_rows(y + p * kPanelRows, acc, int(w.rows() - p * kPanelRows));
    }
}

// Panels per group that every group of activation rows passes over while the group stays
// in L1 or L2; a multiple of the two- and three-panel tiles.
constexpr int64_t kPanelGroup = 6;

// The tiles of a product of panels [p_begin, p_end) with n_x activation rows, in order:
// for each group of kPanelGroup panels, the rows four at a time against two panels (eight
// integer accumulators), then the last one to three rows against two or three panels,
// each tile's panels NV at a time and the rest one by one; tile.template
// operator()<MR, NV>(p, t) takes panels from p against rows from t. Measured on all of the
// model's layer weights: eight rows as two 4 x2 tiles beat 6 x2 plus 2 x2 by 3-10%.
template <class Tile>
void tile_schedule(int64_t p_begin, int64_t p_end, int64_t n_x, Tile&& tile) {
    auto against = [&]<int MR, int NV>(int64_t p0, int64_t p1, int64_t t) {
        int64_t p = p0;
        for (; p + NV <= p1; p += NV) tile.template operator()<MR, NV>(p, t);
        for (; p < p1; ++p) tile.template operator()<MR, 1>(p, t);
    };
    for (int64_t p0 = p_begin; p0 < p_end; p0 += kPanelGroup) {
        const int64_t p1 = std::min(p_end, p0 + kPanelGroup);
        int64_t t = 0;
        for (; t + 4 <= n_x; t += 4) against.template operator()<4, 2>(p0, p1, t);
        switch (n_x - t) {
        case 3: against.template operator()<3, 2>(p0, p1, t); break;
        case 2: against.template operator()<2, 2>(p0, p1, t); break;
        case 1: against.template operator()<1, 3>(p0, p1, t); break;
        default: break;
        }
    }
}

template <class T, class Dot>
void panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                int64_t n_x, float* y, int64_t ldy) {
    if (n_x == 1) return row_stream<T, Dot>(w, p_begin, p_end, x, t0, y);
    const int64_t blocks = w.cols() / 32;
    tile_schedule(p_begin, p_end, n_x, [&]<int MR, int NV>(int64_t p, int64_t t) {
        tile<T, Dot, MR, NV>(blocks, w.panel(p), w.panel_bytes(), x, t0 + t, y + t * ldy + p * kPanelRows, ldy,
                             w.rows() - p * kPanelRows);
    });
}

// Calls f.template operator()<T>() with the layout struct of `layout`.
template <class F>
void with_simd_layout(PanelLayout layout, F&& f) {
    switch (layout) {
    case PanelLayout::Q5_0: f.template operator()<Q5_0P>(); return;
    case PanelLayout::Q5_1: f.template operator()<Q5_1P>(); return;
    case PanelLayout::Q8_0: f.template operator()<Q8_0P>(); return;
    case PanelLayout::IQ4_NL: f.template operator()<IQ4_NLP>(); return;
    case PanelLayout::IQ4_XS: f.template operator()<IQ4_XSP>(); return;
    case PanelLayout::MXFP4: f.template operator()<MXFP4P>(); return;
    case PanelLayout::Q2_K: f.template operator()<Q2_KP>(); return;
    case PanelLayout::Q3_K: f.template operator()<Q3_KP>(); return;
    case PanelLayout::Q4_K: f.template operator()<Q4_KP>(); return;
    case PanelLayout::Q5_K: f.template operator()<Q5_KP>(); return;
    case PanelLayout::Q6_K: f.template operator()<Q6_KP>(); return;
    case PanelLayout::Q4_1: f.template operator()<Q4_1P>(); return;
    }
}

} // namespace
} // namespace arbor::panel_simd
