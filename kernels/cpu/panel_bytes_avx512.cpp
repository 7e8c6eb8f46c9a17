// Panel products of 8-bit activation codes with AVX-512 VNNI's byte products (compiled
// with panel_dot_avx512.cpp's flags), following the contract in panel_weights.h.
// vpdpbusd multiplies four unsigned weight bytes by four signed activation bytes per
// 32-bit lane: 64 products an instruction where vpdpwssd's 16-bit pairs give 32, and a
// block takes eight steps (one per group of four elements) instead of sixteen.
// A lane holds elements 4G .. 4G + 3 of one weight row: from the panels' code bytes of
// group G (row r's two bytes hold the elements' low and high nibbles, Q4_1's order), the
// two bytes widened to a lane and their nibbles spread to four bytes. Q6_K's codes gain
// their two high bits the same way and are taken as q + 32 (0 .. 63, unsigned); the
// sums then lose 32 times the half block's code sum. Every sum is the contract's exact
// integer and the folds are the 16-bit tiles' float steps, so the bits equal the
// reference's with the same codes.
#include "arbor/kernels/panel_weights.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "panel_tile_avx2.h"
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
// The same for one panel's eight rows.
inline __m256i nibble_quads(__m128i words) {
    const __m256i x = _mm256_cvtepu16_epi32(words);
    return _mm256_ternarylogic_epi32(x, _mm256_slli_epi32(x, 12), _mm256_set1_epi32(0x0f0f0f0f), 0xa8);
}
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Each layout with byte codes: quads<G>(codes of panel v, codes of panel v + 1), the
// sixteen rows' elements 4G .. 4G + 3 as unsigned bytes, and quads<G>(codes of one panel),
// its eight rows'; kOffset, what the bytes exceed the contract's codes by (subtracted per
// part as kOffset times its code sum).
struct NibbleQuads {
    static constexpr int kOffset = 0;
    template <int G>
    static __m512i quads(const uint8_t* a, const uint8_t* b) {
        return nibble_quads(two_loads(a + 16 * G, b + 16 * G));
    }
    template <int G>
    static __m256i quads(const uint8_t* a) {
        return nibble_quads(load16(a + 16 * G));
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
    template <int G>
    static __m256i quads(panel_simd::NibblesAndBits a) {
        const __m256i low = NibbleQuads::quads<G>(a.lo);
        const __m256i y = _mm256_cvtepu16_epi32(load16(a.hi + 16 * (G % 4)));
        constexpr int kSh = 4 * (G / 4);
        const __m256i high = _mm256_ternarylogic_epi32(_mm256_slli_epi32(y, 4 - kSh), _mm256_slli_epi32(y, 18 - kSh),
                                                       _mm256_set1_epi32(0x30303030), 0xa8);
        return _mm256_or_si256(low, high);
    }
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
    const int8_t* c[MR];
    const float* d[MR];
    const float* s[MR];
    const int32_t* ch[MR];
    for (int t = 0; t < MR; ++t) {
        c[t] = x.codes8(t0 + t);
        d[t] = x.scales(t0 + t);
        s[t] = T::kParts == 2 ? x.half_sums(t0 + t) : x.sums(t0 + t);
        ch[t] = x.code_half_sums(t0 + t);
    }
    const typename T::Block* pv[NV];
    for (int v = 0; v < NV; ++v)
        pv[v] = reinterpret_cast<const typename T::Block*>(panel + size_t(std::min(v, panels - 1)) * panel_bytes);

    for (int64_t b = 0; b < blocks; ++b) {
        // The next tile's block b (a prefetch past the end is harmless).
        for (int v = 0; v < NV; ++v) {
            const char* ahead = reinterpret_cast<const char*>(panel) + (NV + v) * panel_bytes + b * T::kBlockBytes;
            for (size_t at = 0; at < T::kBlockBytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            _mm_prefetch(ahead + T::kBlockBytes - 1, _MM_HINT_T0);
        }
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
                    __m512i sum = n[t][z];
                    if constexpr (Q::kOffset != 0) {
                        static_assert(T::kParts == 2, "offsets are per half block");
                        sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(Q::kOffset * ch[t][2 * b + part]));
                    }
                    acc[t][z] = panel_simd::fold16<T::kHasMin>(acc[t][z], sum, dw, mw, d[t][b], s[t][T::kParts * b + part]);
                    n[t][z] = _mm512_setzero_si512();
                }
            }
        };
        [&]<int... G>(std::integer_sequence<int, G...>) {
            ((group.template operator()<G>(), T::kParts == 2 && G == 3 ? fold(0) : void()), ...);
        }(std::make_integer_sequence<int, 8>{});
        fold(T::kParts - 1);
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

// One activation row against panels [p_begin, p_end) one at a time, in memory order (one
// sequential stream of weights, as the 16-bit row_stream in panel_tile_avx2.h, which
// this follows with eight byte-product steps a block instead of sixteen pair steps); the
// even and odd groups' sums in two chains, added at the fold.
template <class T, class Q>
void row_stream(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t,
                float* y) {
    const int64_t blocks = w.cols() / 32;
    const int8_t* c = x.codes8(t);
    const float* d = x.scales(t);
    const float* s = T::kParts == 2 ? x.half_sums(t) : x.sums(t);
    const int32_t* ch = x.code_half_sums(t);
    for (int64_t p = p_begin; p < p_end; ++p) {
        const typename T::Block* pv = reinterpret_cast<const typename T::Block*>(w.panel(p));
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < blocks; ++b) {
            const char* ahead = reinterpret_cast<const char*>(pv) + b * T::kBlockBytes + panel_simd::kStreamAhead;
            for (size_t at = 0; at < T::kBlockBytes; at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            __m256i n[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            const typename T::Codes q = T::codes(pv, b);
            const int8_t* cb = c + b * 32;
            auto group = [&]<int G>() {
                int32_t quad;
                std::memcpy(&quad, cb + 4 * G, sizeof quad);
                n[G % 2] = _mm256_dpbusd_epi32(n[G % 2], Q::template quads<G>(q), _mm256_set1_epi32(quad));
            };
            auto fold = [&](int part) {
                __m256i sum = _mm256_add_epi32(n[0], n[1]);
                if constexpr (Q::kOffset != 0) sum = _mm256_sub_epi32(sum, _mm256_set1_epi32(Q::kOffset * ch[2 * b + part]));
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(T::dw(pv, b, part), _mm256_set1_ps(d[b])),
                                      acc);
                if constexpr (T::kHasMin)
                    acc = _mm256_fmadd_ps(T::mw(pv, b, part), _mm256_set1_ps(s[T::kParts * b + part]), acc);
                n[0] = n[1] = _mm256_setzero_si256();
            };
            [&]<int... G>(std::integer_sequence<int, G...>) {
                ((group.template operator()<G>(), T::kParts == 2 && G == 3 ? fold(0) : void()), ...);
            }(std::make_integer_sequence<int, 8>{});
            fold(T::kParts - 1);
        }
        panel_simd::store_rows(y + p * kPanelRows, acc, int(w.rows() - p * kPanelRows));
    }
}

// Panels per group that every group of activation rows passes over while it stays in L1
// or L2 (as the 16-bit tiles').
constexpr int64_t kPanelGroup = 8;

template <class T, class Q>
void panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                int64_t n_x, float* y, int64_t ldy) {
    if (n_x == 1) return row_stream<T, Q>(w, p_begin, p_end, x, t0, y);
    for (int64_t p0 = p_begin; p0 < p_end; p0 += kPanelGroup) {
        const int64_t p1 = std::min(p_end, p0 + kPanelGroup);
        panel_simd::row_tiles(n_x, [&]<int MR>(int64_t t) {
            panels_against<T, Q, MR, 2>(w, p0, p1, x, t0 + t, y + t * ldy, ldy);
        });
    }
}

} // namespace

bool panel_dot_bytes(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                     int64_t n_x, float* y, int64_t ldy) {
    if (x.limit() != kPanelCodeLimit8) return false;
    switch (w.layout()) {
    case PanelLayout::Q4_1: panel_rows<panel_simd::Q4_1P, NibbleQuads>(w, p_begin, p_end, x, t0, n_x, y, ldy); return true;
    case PanelLayout::Q4_K: panel_rows<panel_simd::Q4_KP, NibbleQuads>(w, p_begin, p_end, x, t0, n_x, y, ldy); return true;
    case PanelLayout::Q6_K: panel_rows<panel_simd::Q6_KP, Q6Quads>(w, p_begin, p_end, x, t0, n_x, y, ldy); return true;
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
