// Panel products of 8-bit activation codes with AVX-512 VNNI's byte products (compiled
// with panel_dot_avx512.cpp's flags), following the contract in panel_weights.h and
// panel_bytes_tile.h's lanes: vpdpbusd multiplies four unsigned weight bytes by four
// signed activation bytes per 32-bit lane, 64 products an instruction where vpdpwssd's
// 16-bit pairs give 32, with two panels a register in the tiles (a lone row streams its
// panels with the 256-bit form). The bits equal the reference's with the same codes.
#include "arbor/kernels/panel_weights.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "panel_bytes_tile.h"
#include "panel_tile_avx512.h"

namespace arbor::avx512 {
namespace {

inline __m256i two_loads(const uint8_t* a, const uint8_t* b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
}

// Sixteen rows' 16-bit words (bytes 2r, 2r + 1 of a group, two panels) as lanes whose
// bytes are the words' nibbles: low of byte 0, low of byte 1, high of byte 0, high of byte 1.
inline __m512i nibble_quads(__m256i words) {
    const __m512i x = _mm512_cvtepu16_epi32(words);
    // (x | x << 12) & 0x0f0f0f0f (ternary-logic table 0xa8: (A | B) & C).
    return _mm512_ternarylogic_epi32(x, _mm512_slli_epi32(x, 12), _mm512_set1_epi32(0x0f0f0f0f), 0xa8);
}

// Each layout with byte codes: quads<G>(codes of panel v, codes of panel v + 1), the
// sixteen rows' elements 4G .. 4G + 3 as unsigned bytes (panel_bytes_tile.h's eight-row
// quads, two panels at once); kOffset, what the bytes exceed the contract's codes by.
// Written out for sixteen lanes rather than pairing the eight-row ones: that pairing made
// int8 pp512 on 1B Q4_K_M 2-3% slower (199-206 against 206-210 tokens/s, alternating).
struct NibbleQuads {
    static constexpr int kOffset = 0;
    template <int G>
    static __m512i quads(const uint8_t* a, const uint8_t* b) {
        return nibble_quads(two_loads(a + 16 * G, b + 16 * G));
    }
};

// Q6_K: the low nibbles as above; the high two bits of group G's elements sit at bits
// 4 (G / 4) (low-nibble element) and 4 (G / 4) + 2 (high-nibble element) of the qh bytes
// qh[G % 4][2r + i], brought to bits 4-5 of the quad's bytes.
struct Q6Quads {
    static constexpr int kOffset = 32;
    template <int G>
    static __m512i quads(panel_simd::NibblesAndBits a, panel_simd::NibblesAndBits b) {
        const __m512i low = NibbleQuads::quads<G>(a.lo, b.lo);
        const __m512i y = _mm512_cvtepu16_epi32(two_loads(a.hi + 16 * (G % 4), b.hi + 16 * (G % 4)));
        constexpr int kSh = 4 * (G / 4);
        const __m512i high = _mm512_ternarylogic_epi32(_mm512_slli_epi32(y, 4 - kSh), _mm512_slli_epi32(y, 18 - kSh),
                                                       _mm512_set1_epi32(0x30303030), 0xa8);
        return _mm512_or_si512(low, high);
    }
};

// A lone row's stream (panel_bytes_tile.h) with the EVEX 256-bit vpdpbusd.
struct Dpbusd256 {
    static __m256i dot(__m256i sums, __m256i weights, __m256i x) { return _mm256_dpbusd_epi32(sums, weights, x); }
};

using panel_simd::pair_of;

inline __m512i code_quad(const int8_t* c) {
    int32_t quad;
    std::memcpy(&quad, c, sizeof quad);
    return _mm512_set1_epi32(quad);
}

// MR activation rows (from t0) against NZ pairs of panels from `panel`; `panels` of
// them exist (an odd last panel pairs with itself, its copy's outputs not stored) and
// `rows` weight rows from the first.
template <class T, class Q, int MR, int NZ>
void tile(int64_t blocks, const uint8_t* panel, size_t panel_bytes, int panels, const PanelActivations& x, int64_t t0,
          float* y, int64_t ldy, int64_t rows) {
    constexpr int NV = 2 * NZ;
    __m512 acc[MR][NZ];
    for (auto& row : acc)
        for (auto& a : row) a = _mm512_setzero_ps();
    const panel_simd::ByteTileRows<T, MR> r(x, t0);
    // Plain references, not a structured binding: Clang 14 cannot capture one in a lambda.
    const auto& c = r.c;
    const auto& d = r.d;
    const auto& s = r.s;
    const auto& ch = r.ch;
    const typename T::Block* pv[NV];
    for (int v = 0; v < NV; ++v)
        pv[v] = reinterpret_cast<const typename T::Block*>(panel + size_t(std::min(v, panels - 1)) * panel_bytes);
    const panel_simd::TilePanels<T, NV> next(panel, panel_bytes);  // for its prefetches only

    for (int64_t b = 0; b < blocks; ++b) {
        next.prefetch_next(b);
        __m512i n[MR][NZ];
        for (auto& row : n)
            for (auto& a : row) a = _mm512_setzero_si512();
        const int64_t at = b * 32;
        typename T::Codes q[NV];
        for (int v = 0; v < NV; ++v) q[v] = T::codes(pv[v], b);
        auto group = [&]<int G>() {
            __m512i w[NZ];
            for (int z = 0; z < NZ; ++z) w[z] = Q::template quads<G>(q[2 * z], q[2 * z + 1]);
            for (int t = 0; t < MR; ++t) {
                const __m512i xc = code_quad(c[t] + at + 4 * G);
                for (int z = 0; z < NZ; ++z) n[t][z] = _mm512_dpbusd_epi32(n[t][z], w[z], xc);
            }
            // Keeps the sums in registers between groups (see AVX2's tile).
            for (auto& row : n)
                for (auto& a : row) asm("" : "+v"(a));
        };
        auto fold = [&](int part) {
            for (int z = 0; z < NZ; ++z) {
                const __m512 dw = pair_of(T::dw(pv[2 * z], b, part), T::dw(pv[2 * z + 1], b, part));
                const __m512 mw = pair_of(T::mw(pv[2 * z], b, part), T::mw(pv[2 * z + 1], b, part));
                for (int t = 0; t < MR; ++t) {
                    // The offset per half block (panel_bytes_tile.h's contract_sum, sixteen lanes).
                    static_assert(Q::kOffset == 0 || T::kParts == 2, "offsets are per half block");
                    const __m512i sum = Q::kOffset == 0 ? n[t][z]
                                                        : _mm512_sub_epi32(n[t][z], _mm512_set1_epi32(Q::kOffset * ch[t][2 * b + part]));
                    acc[t][z] = panel_simd::fold16<T::kHasMin>(acc[t][z], sum, dw, mw, d[t][b], s[t][T::kParts * b + part]);
                    n[t][z] = _mm512_setzero_si512();
                }
            }
        };
        panel_simd::byte_block_steps<T>(group, fold);
    }
    for (int t = 0; t < MR; ++t)
        for (int z = 0; z < NZ; ++z) {
            const int64_t exist = std::min<int64_t>(rows, int64_t(panels) * kPanelRows) - int64_t(z) * 2 * kPanelRows;
            panel_simd::store_rows16(y + t * ldy + z * 2 * kPanelRows, acc[t][z], exist);
        }
}

// Panels [p_begin, p_end) against MR activation rows: 2 NZ panels at a time, then pairs,
// then an odd last panel.
template <class T, class Q, int MR, int NZ>
void panels_against(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                    float* y, int64_t ldy) {
    const int64_t blocks = w.cols() / 32;
    auto run = [&]<int N>(int64_t p, int panels) {
        tile<T, Q, MR, N>(blocks, w.panel(p), w.panel_bytes(), panels, x, t0, y + p * kPanelRows, ldy,
                          w.rows() - p * kPanelRows);
    };
    int64_t p = p_begin;
    for (; p + 2 * NZ <= p_end; p += 2 * NZ) run.template operator()<NZ>(p, 2 * NZ);
    for (; p < p_end; p += 2) run.template operator()<1>(p, int(std::min<int64_t>(2, p_end - p)));
}

// Q: the two-panel quads of the tiles; Q8: the eight-row quads of a lone row's stream.
template <class T, class Q, class Q8>
void panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                int64_t n_x, float* y, int64_t ldy) {
    if (n_x == 1) return panel_simd::byte_row_stream<T, Q8, Dpbusd256>(w, p_begin, p_end, x, t0, y);
    panel_simd::tile_schedule16(p_begin, p_end, n_x, [&]<int MR>(int64_t p0, int64_t p1, int64_t t) {
        panels_against<T, Q, MR, 2>(w, p0, p1, x, t0 + t, y + t * ldy, ldy);
    });
}

} // namespace

bool panel_dot_bytes(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                     int64_t n_x, float* y, int64_t ldy) {
    if (x.limit() != kPanelCodeLimit8) return false;
    switch (w.layout()) {
    case PanelLayout::Q4_1:
        panel_rows<panel_simd::Q4_1P, NibbleQuads, panel_simd::NibbleQuads>(w, p_begin, p_end, x, t0, n_x, y, ldy);
        return true;
    case PanelLayout::Q4_K:
        panel_rows<panel_simd::Q4_KP, NibbleQuads, panel_simd::NibbleQuads>(w, p_begin, p_end, x, t0, n_x, y, ldy);
        return true;
    case PanelLayout::Q6_K:
        panel_rows<panel_simd::Q6_KP, Q6Quads, panel_simd::Q6Quads>(w, p_begin, p_end, x, t0, n_x, y, ldy);
        return true;
    default: return false;
    }
}

} // namespace arbor::avx512

#else

namespace arbor::avx512 {
bool panel_dot_bytes(const PanelWeights&, int64_t, int64_t, const PanelActivations&, int64_t, int64_t, float*, int64_t) {
    return false;
}
} // namespace arbor::avx512

#endif
