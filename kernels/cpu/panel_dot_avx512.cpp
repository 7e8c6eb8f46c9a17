// AVX-512 panel products (compiled with AVX2's flags plus -mavx512f -mavx512bw -mavx512dq
// -mavx512vl -mavx512vnni), following the contract in panel_weights.h.
// A 512-bit register holds two panels' code pairs (panel v in lanes 0-15, v + 1 in
// 16-31), each half widened by AVX2's per-layout code (panel_tile_avx2.h); one vpdpwssd
// per activation row multiplies them into sixteen weight rows' sums (AVX2 needs a
// vpmaddwd and a vpaddd per eight rows). With 32 registers the float accumulators stay in
// registers too. A matrix's odd last panel goes through AVX2's tile with the 256-bit
// vpdpwssd. The float steps are the contract's, lane by lane, so the bits equal AVX2's
// and the reference's.
#include "arbor/kernels/panel_weights.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "panel_tile_avx2.h"
#include "panel_tile_avx512.h"

namespace arbor::avx512 {
namespace {

using panel_simd::pair_of;
using panel_simd::with_simd_layout;

struct Dpwssd256 {
    static __m256i dot(__m256i sums, __m256i codes, __m256i x) { return _mm256_dpwssd_epi32(sums, codes, x); }
};

inline __m512i code_pair(const int16_t* c) {
    int32_t pair;
    std::memcpy(&pair, c, sizeof pair);
    return _mm512_set1_epi32(pair);
}

// MR activation rows (from t0) against 2 NZ consecutive panels (the first at `panel`, the
// rest panel_bytes apart); `rows` counts the weight rows that exist from the first.
template <class T, int MR, int NZ>
void tile(int64_t blocks, const uint8_t* panel, size_t panel_bytes, const PanelActivations& x, int64_t t0, float* y,
          int64_t ldy, int64_t rows) {
    constexpr int NV = 2 * NZ;
    __m512 acc[MR][NZ];
    for (auto& row : acc)
        for (auto& a : row) a = _mm512_setzero_ps();
    const panel_simd::TileRows<T, MR> r(x, t0);
    // Plain references, not a structured binding: Clang 14 cannot capture one in a lambda.
    const auto& c = r.c;
    const auto& d = r.d;
    const auto& s = r.s;
    const panel_simd::TilePanels<T, NV> pv(panel, panel_bytes);

    for (int64_t b = 0; b < blocks; ++b) {
        pv.prefetch_next(b);
        __m512i n[MR][NZ];
        for (auto& row : n)
            for (auto& a : row) a = _mm512_setzero_si512();
        const int64_t at = b * 32;
        typename T::Codes q[NV];
        for (int v = 0; v < NV; ++v) q[v] = T::codes(pv[v], b);
        auto half = [&]<int G, int Half>() {
            __m512i w[NZ];
            for (int z = 0; z < NZ; ++z)
                w[z] = pair_of(T::template half<G, Half>(q[2 * z]), T::template half<G, Half>(q[2 * z + 1]));
            for (int t = 0; t < MR; ++t) {
                const __m512i xc = code_pair(c[t] + at + 4 * G + 2 * Half);
                for (int z = 0; z < NZ; ++z) n[t][z] = _mm512_dpwssd_epi32(n[t][z], w[z], xc);
            }
            // Keeps the sums in registers between halves (see AVX2's tile).
            for (auto& row : n)
                for (auto& a : row) asm("" : "+v"(a));
        };
        auto fold = [&](int part) {
            for (int z = 0; z < NZ; ++z) {
                const __m512 dw = pair_of(T::dw(pv[2 * z], b, part), T::dw(pv[2 * z + 1], b, part));
                const __m512 mw = pair_of(T::mw(pv[2 * z], b, part), T::mw(pv[2 * z + 1], b, part));
                for (int t = 0; t < MR; ++t) {
                    acc[t][z] = panel_simd::fold16<T::kHasMin>(acc[t][z], n[t][z], dw, mw, d[t][b],
                                                                 s[t][T::kParts * b + part]);
                    n[t][z] = _mm512_setzero_si512();
                }
            }
        };
        panel_simd::block_steps<T>(half, fold);
    }
    for (int t = 0; t < MR; ++t)
        for (int z = 0; z < NZ; ++z)
            panel_simd::store_rows16(y + t * ldy + z * 2 * kPanelRows, acc[t][z], rows - int64_t(z) * 2 * kPanelRows);
}

// Panels [p_begin, p_end) against MR activation rows: 2 NZ panels at a time, then pairs,
// then an odd last panel with AVX2's tile.
template <class T, int MR, int NZ>
void panels_against(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                    float* y, int64_t ldy) {
    const int64_t blocks = w.cols() / 32;
    auto run = [&]<int N>(int64_t p) {
        tile<T, MR, N>(blocks, w.panel(p), w.panel_bytes(), x, t0, y + p * kPanelRows, ldy,
                       w.rows() - p * kPanelRows);
    };
    int64_t p = p_begin;
    for (; p + 2 * NZ <= p_end; p += 2 * NZ) run.template operator()<NZ>(p);
    for (; p + 2 <= p_end; p += 2) run.template operator()<1>(p);
    if (p < p_end)
        panel_simd::tile<T, Dpwssd256, MR, 1>(blocks, w.panel(p), w.panel_bytes(), x, t0, y + p * kPanelRows, ldy,
                                              w.rows() - p * kPanelRows);
}

template <class T>
void panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
                int64_t n_x, float* y, int64_t ldy) {
    if (n_x == 1) return panel_simd::row_stream<T, Dpwssd256>(w, p_begin, p_end, x, t0, y);
    panel_simd::tile_schedule16(p_begin, p_end, n_x, [&]<int MR>(int64_t p0, int64_t p1, int64_t t) {
        panels_against<T, MR, 2>(w, p0, p1, x, t0 + t, y + t * ldy, ldy);
    });
}

} // namespace

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    if (panel_dot_bytes(w, p_begin, p_end, x, t0, n_x, y, ldy)) return;
    with_simd_layout(w.layout(), [&]<class T>() { panel_rows<T>(w, p_begin, p_end, x, t0, n_x, y, ldy); });
}

} // namespace arbor::avx512

#else

// Built without these flags (a non-x86 target): AVX2's tiles (or the reference).
namespace arbor::avx512 {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const PanelActivations& x, int64_t t0,
               int64_t n_x, float* y, int64_t ldy) {
    avx2::panel_dot(w, p_begin, p_end, x, t0, n_x, y, ldy);
}
} // namespace arbor::avx512

#endif
