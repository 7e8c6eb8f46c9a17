// The 256-bit byte products of 8-bit activation codes (int8 activations) for the panel
// layouts whose codes fit unsigned bytes (Q4_0/Q4_1, Q4_K and Q6_K), shared by the ISA
// units that include this header after panel_tile_avx2.h, each with its own flags and
// its own byte product (`Dot`): AVX2's vpmaddubsw + vpmaddwd + vpaddd, AVX-VNNI's VEX
// vpdpbusd, AVX-512 VNNI's EVEX one. A lane holds elements 4G .. 4G + 3 of one weight
// row: the group's two code bytes of the row (the elements' low and high nibbles, Q4_1's
// order) widened to a lane and spread to four bytes; Q6_K's codes gain their two high
// bits the same way and are taken as q + 32 (0 .. 63), the sums then losing 32 times the
// half block's code sum. Every sum is the contract's exact integer (vpmaddubsw's pairs
// stay under 2 x 63 x 127, far from its saturation) and the folds are the 16-bit tiles'
// float steps, so the bits equal the reference's with the same codes; a block takes
// eight steps where the 16-bit tiles take sixteen.
#pragma once

#include "panel_tile_avx2.h"

namespace arbor::panel_simd {
namespace {

inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Eight rows' 16-bit words (bytes 2r, 2r + 1 of a group) as lanes whose bytes are the
// words' nibbles: low of byte 0, low of byte 1, high of byte 0, high of byte 1.
inline __m256i nibble_quads(__m128i words) {
    const __m256i x = _mm256_cvtepu16_epi32(words);
    return _mm256_and_si256(_mm256_or_si256(x, _mm256_slli_epi32(x, 12)), _mm256_set1_epi32(0x0f0f0f0f));
}

// Each layout with byte codes: quads<G>(codes of a panel), its eight rows' elements
// 4G .. 4G + 3 as unsigned bytes; kOffset, what the bytes exceed the contract's codes by
// (subtracted per part as kOffset times its code sum).
struct NibbleQuads {
    static constexpr int kOffset = 0;
    template <int G>
    static __m256i quads(const uint8_t* q) {
        return nibble_quads(load16(q + 16 * G));
    }
};

// Q6_K: the low nibbles as above; the high two bits of group G's elements sit at bits
// 4 (G / 4) (low-nibble element) and 4 (G / 4) + 2 (high-nibble element) of the qh bytes
// qh[G % 4][2r + i], brought to bits 4-5 of the quad's bytes.
struct Q6Quads {
    static constexpr int kOffset = 32;
    template <int G>
    static __m256i quads(NibblesAndBits q) {
        const __m256i low = NibbleQuads::quads<G>(q.lo);
        const __m256i y = _mm256_cvtepu16_epi32(load16(q.hi + 16 * (G % 4)));
        constexpr int kSh = 4 * (G / 4);
        const __m256i high = _mm256_and_si256(_mm256_or_si256(_mm256_slli_epi32(y, 4 - kSh), _mm256_slli_epi32(y, 18 - kSh)),
                                              _mm256_set1_epi32(0x30303030));
        return _mm256_or_si256(low, high);
    }
};

// AVX2's byte product: vpmaddubsw's pairs, widened and summed by vpmaddwd, into the sums.
struct MaddubsAdd {
    static __m256i dot(__m256i sums, __m256i weights, __m256i x) {
        return _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_maddubs_epi16(weights, x), _mm256_set1_epi16(1)));
    }
};

inline __m256i code_quad(const int8_t* c) {
    int32_t quad;
    std::memcpy(&quad, c, sizeof quad);
    return _mm256_set1_epi32(quad);
}

// Calls group.template operator()<G>() for the groups of a block in order and
// fold(part) where a part's sums end (after group 3 as well where a block has two).
template <class T, class Group, class Fold>
inline void byte_block_steps(Group& group, Fold& fold) {
    [&]<int... G>(std::integer_sequence<int, G...>) {
        ((group.template operator()<G>(), T::kParts == 2 && G == 3 ? fold(0) : void()), ...);
    }(std::make_integer_sequence<int, 8>{});
    fold(T::kParts - 1);
}

// A tile's activation rows: byte codes, block scales, sums (per block, or per half block
// where a part has its own scale) and integer half-block code sums.
template <class T, int MR>
struct ByteTileRows {
    const int8_t* c[MR];
    const float* d[MR];
    const float* s[MR];
    const int32_t* ch[MR];
    ByteTileRows(const PanelActivations& x, int64_t t0) {
        for (int t = 0; t < MR; ++t) {
            c[t] = x.codes8(t0 + t);
            d[t] = x.scales(t0 + t);
            s[t] = T::kParts == 2 ? x.half_sums(t0 + t) : x.sums(t0 + t);
            ch[t] = x.code_half_sums(t0 + t);
        }
    }
};

// A part's integer sums less the offset, as the contract's sum.
template <class Q>
inline __m256i contract_sum(__m256i sum, const int32_t* code_half_sums, int64_t b, int part) {
    if constexpr (Q::kOffset == 0) return sum;
    else return _mm256_sub_epi32(sum, _mm256_set1_epi32(Q::kOffset * code_half_sums[2 * b + part]));
}

// One activation row against panels [p_begin, p_end) one at a time, in memory order (one
// sequential stream of weights, as row_stream); the even and odd groups' sums in two
// chains, added at the fold.
template <class T, class Q, class Dot>
void byte_row_stream(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t,
                     float* y) {
    static_assert(Q::kOffset == 0 || T::kParts == 2, "offsets are per half block");
    const int64_t blocks = w.cols() / 32;
    const int8_t* c = x.codes8(t);
    const float* d = x.scales(t);
    const float* s = T::kParts == 2 ? x.half_sums(t) : x.sums(t);
    const int32_t* ch = x.code_half_sums(t);
    for (int64_t p = p_begin; p < p_end; ++p) {
        const typename T::Block* pv = reinterpret_cast<const typename T::Block*>(w.panel(p));
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            const char* ahead = reinterpret_cast<const char*>(pv) + b * T::kBlockBytes + kStreamAhead;
            for (size_t at = 0; at < T::kBlockBytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            __m256i n[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            const typename T::Codes q = T::codes(pv, b);
            const int8_t* cb = c + b * 32;
            auto group = [&]<int G>() { n[G % 2] = Dot::dot(n[G % 2], Q::template quads<G>(q), code_quad(cb + 4 * G)); };
            auto fold = [&](int part) {
                const __m256i sum = contract_sum<Q>(_mm256_add_epi32(n[0], n[1]), ch, b, part);
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(T::dw(pv, b, part), _mm256_set1_ps(d[b])),
                                      acc);
                if constexpr (T::kHasMin)
                    acc = _mm256_fmadd_ps(T::mw(pv, b, part), _mm256_set1_ps(s[T::kParts * b + part]), acc);
                n[0] = n[1] = _mm256_setzero_si256();
            };
            byte_block_steps<T>(group, fold);
        }
        store_rows(y + p * kPanelRows, acc, int(w.rows() - p * kPanelRows));
    }
}

// MR activation rows (from t0) against NV consecutive panels, as tile() with 16-bit codes
// (its float accumulators in memory from eight integer ones on, for the same reason).
template <class T, class Q, class Dot, int MR, int NV>
void byte_tile(int64_t blocks, const uint8_t* panel, size_t panel_bytes, const PanelActivations& x, int64_t t0,
               float* y, int64_t ldy, int64_t rows) {
    constexpr bool kInMemory = MR * NV >= 8;
    alignas(32) float accf[MR][NV][8] = {};
    __m256 accr[MR][NV];
    for (auto& row : accr)
        for (auto& a : row) a = _mm256_setzero_ps();
    const ByteTileRows<T, MR> r(x, t0);
    // Plain references, not a structured binding: Clang 14 cannot capture one in a lambda.
    const auto& c = r.c;
    const auto& d = r.d;
    const auto& s = r.s;
    const auto& ch = r.ch;
    const TilePanels<T, NV> pv(panel, panel_bytes);
    for (int64_t b = 0; b < blocks; ++b) {
        pv.prefetch_next(b);
        __m256i n[MR][NV];
        for (auto& row : n)
            for (auto& a : row) a = _mm256_setzero_si256();
        const int64_t at = b * 32;
        typename T::Codes q[NV];
        for (int v = 0; v < NV; ++v) q[v] = T::codes(pv[v], b);
        auto group = [&]<int G>() {
            __m256i wq[NV];
            for (int v = 0; v < NV; ++v) wq[v] = Q::template quads<G>(q[v]);
            for (int t = 0; t < MR; ++t) {
                const __m256i xc = code_quad(c[t] + at + 4 * G);
                for (int v = 0; v < NV; ++v) n[t][v] = Dot::dot(n[t][v], wq[v], xc);
            }
            for (auto& row : n)
                for (auto& a : row) asm("" : "+x"(a));
        };
        auto fold = [&](int part) {
            for (int v = 0; v < NV; ++v) {
                const __m256 dw = T::dw(pv[v], b, part);
                const __m256 mw = T::mw(pv[v], b, part);
                for (int t = 0; t < MR; ++t) {
                    __m256 acc = kInMemory ? _mm256_load_ps(accf[t][v]) : accr[t][v];
                    const __m256i sum = contract_sum<Q>(n[t][v], ch[t], b, part);
                    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(d[t][b])), acc);
                    if constexpr (T::kHasMin)
                        acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(s[t][T::kParts * b + part]), acc);
                    if constexpr (kInMemory) _mm256_store_ps(accf[t][v], acc);
                    else accr[t][v] = acc;
                    n[t][v] = _mm256_setzero_si256();
                }
            }
        };
        byte_block_steps<T>(group, fold);
        if constexpr (kInMemory) asm volatile("" : : "r"(&accf[0][0][0]) : "memory");
    }
    for (int t = 0; t < MR; ++t)
        for (int v = 0; v < NV; ++v)
            store_rows(y + t * ldy + v * kPanelRows, kInMemory ? _mm256_load_ps(accf[t][v]) : accr[t][v],
                       int(rows - int64_t(v) * kPanelRows));
}

// As panel_rows: a lone row streams, the others go through tile_schedule's tiles.
template <class T, class Q, class Dot>
void byte_panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                     int64_t n_x, float* y, int64_t ldy) {
    if (n_x == 1) return byte_row_stream<T, Q, Dot>(w, p_begin, p_end, x, t0, y);
    const int64_t blocks = w.cols() / 32;
    tile_schedule(p_begin, p_end, n_x, [&]<int MR, int NV>(int64_t p, int64_t t) {
        byte_tile<T, Q, Dot, MR, NV>(blocks, w.panel(p), w.panel_bytes(), x, t0 + t, y + t * ldy + p * kPanelRows,
                                     ldy, w.rows() - p * kPanelRows);
    });
}

// Calls f.template operator()<T, Q>() with the layout and quads of `layout` when its codes
// fit bytes; returns whether they do.
template <class F>
bool with_byte_layout(PanelLayout layout, F&& f) {
    switch (layout) {
    case PanelLayout::Q4_1: f.template operator()<Q4_1P, NibbleQuads>(); return true;
    case PanelLayout::Q4_K: f.template operator()<Q4_KP, NibbleQuads>(); return true;
    case PanelLayout::Q6_K: f.template operator()<Q6_KP, Q6Quads>(); return true;
    default: return false;
    }
}

// The panel products with byte products where the codes are 8-bit and the layout's
// codes fit bytes; false (nothing written) otherwise.
template <class Dot>
bool byte_panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                    int64_t n_x, float* y, int64_t ldy) {
    if (x.limit() != kPanelCodeLimit8) return false;
    return with_byte_layout(w.layout(), [&]<class T, class Q>() {
        byte_panel_rows<T, Q, Dot>(w, p_begin, p_end, x, t0, n_x, y, ldy);
    });
}

} // namespace
} // namespace arbor::panel_simd
