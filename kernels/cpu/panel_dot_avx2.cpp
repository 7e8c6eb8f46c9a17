// AVX2/FMA panel products (compiled with -mavx2 -mfma -mf16c), following the operation
// order in panel_weights.h: tiles of MR activation rows x NV panels keep MR * NV
// accumulators, each the running sums of eight weight rows for one activation row.
// Each panel block's element vector is dequantized once in registers for the MR rows
// (d * q is exact in float, so fma(q, d, m) equals dequantize_row's d * q + m).
#include "arbor/kernels/panel_weights.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>
#include <utility>

namespace arbor::avx2 {
namespace {

inline __m256 halves(const uint16_t (&h)[kPanelRows]) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// pair<G>(block, scales, even, odd): elements 2G and 2G + 1 of the block for the eight
// rows, as floats (one load of codes serves both for Q4_1).
struct Q4_1P {
    using Block = PanelBlockQ4_1;
    struct Scales { __m256 d, m; };
    static Scales scales(const Block& b) { return {halves(b.d), halves(b.m)}; }
    template <int G>
    static void pair(const Block& b, const Scales& s, __m256& even, __m256& odd) {
        const __m256i codes = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs[G])));
        even = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(codes, _mm256_set1_epi32(0x0f))), s.d, s.m);
        odd = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(codes, 4)), s.d, s.m);
    }
};

struct Q8_0P {
    using Block = PanelBlockQ8_0;
    struct Scales { __m256 d; };
    static Scales scales(const Block& b) { return {halves(b.d)}; }
    template <int G>
    static void pair(const Block& b, const Scales& s, __m256& even, __m256& odd) {
        even = _mm256_mul_ps(code(b.qs[2 * G]), s.d);
        odd = _mm256_mul_ps(code(b.qs[2 * G + 1]), s.d);
    }

private:
    static __m256 code(const int8_t (&q)[kPanelRows]) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
    }
};

// Rows of the panel that exist: all eight except in a matrix's last panel.
inline void store_rows(float* y, __m256 v, int rows) {
    if (rows >= kPanelRows) {
        _mm256_storeu_ps(y, v);
        return;
    }
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(y, _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), lane), v);
}

// MR activation rows against NV consecutive panels (the first at `panel`, the rest
// panel_blocks blocks apart); `rows` counts the weight rows that exist from the first.
template <class T, int MR, int NV>
void tile(int64_t blocks, const typename T::Block* panel, int64_t panel_blocks, const float* x, int64_t ldx,
          float* y, int64_t ldy, int64_t rows) {
    __m256 acc[MR][NV];
    for (auto& row : acc)
        for (auto& a : row) a = _mm256_setzero_ps();
    // One pointer per activation row, indexed by the block's offset (row-times-stride
    // arithmetic inside the loop spilled).
    const float* xr[MR];
    for (int t = 0; t < MR; ++t) xr[t] = x + t * ldx;
    const typename T::Block* pv[NV];
    for (int v = 0; v < NV; ++v) pv[v] = panel + v * panel_blocks;

    for (int64_t b = 0; b < blocks; ++b) {
        // The same block of the next NV panels (the next tile's, usually): streaming
        // from memory, a single activation row otherwise waits on the weights (measured
        // with all of a step's weights in turn). A prefetch past the end is harmless.
        for (int v = 0; v < NV; ++v) {
            const char* ahead = reinterpret_cast<const char*>(pv[v] + NV * panel_blocks + b);
            for (size_t at = 0; at < sizeof(typename T::Block); at += 64) _mm_prefetch(ahead + at, _MM_HINT_T0);
            _mm_prefetch(ahead + sizeof(typename T::Block) - 1, _MM_HINT_T0);
        }
        typename T::Scales s[NV];
        for (int v = 0; v < NV; ++v) s[v] = T::scales(pv[v][b]);
        const int64_t at = b * 32;
        [&]<int... G>(std::integer_sequence<int, G...>) {
            auto step = [&]<int P>() {
                __m256 even[NV], odd[NV];
                for (int v = 0; v < NV; ++v) T::template pair<P>(pv[v][b], s[v], even[v], odd[v]);
                for (int t = 0; t < MR; ++t) {
                    const __m256 xe = _mm256_broadcast_ss(xr[t] + at + 2 * P);
                    for (int v = 0; v < NV; ++v) acc[t][v] = _mm256_fmadd_ps(even[v], xe, acc[t][v]);
                }
                for (int t = 0; t < MR; ++t) {
                    const __m256 xo = _mm256_broadcast_ss(xr[t] + at + 2 * P + 1);
                    for (int v = 0; v < NV; ++v) acc[t][v] = _mm256_fmadd_ps(odd[v], xo, acc[t][v]);
                }
            };
            (step.template operator()<G>(), ...);
        }(std::make_integer_sequence<int, 16>{});
    }
    for (int t = 0; t < MR; ++t)
        for (int v = 0; v < NV; ++v)
            store_rows(y + t * ldy + v * kPanelRows, acc[t][v], int(rows - int64_t(v) * kPanelRows));
}

// Panels [p_begin, p_end) against MR activation rows, NV panels at a time and the rest
// one by one.
template <class T, int MR, int NV>
void panels_against(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, float* y,
                    int64_t ldy) {
    const int64_t blocks = w.cols() / 32;
    auto run = [&]<int N>(int64_t p) {
        tile<T, MR, N>(blocks, reinterpret_cast<const typename T::Block*>(w.panel(p)), blocks, x, ldx,
                       y + p * kPanelRows, ldy, w.rows() - p * kPanelRows);
    };
    int64_t p = p_begin;
    for (; p + NV <= p_end; p += NV) run.template operator()<NV>(p);
    for (; p < p_end; ++p) run.template operator()<1>(p);
}

// Panels per group that every group of activation rows passes over while the group stays
// in L1 or L2 (six of the default model's longest rows: 46 KiB); a multiple of the one-
// to three-panel tiles.
constexpr int64_t kPanelGroup = 6;

// Activation rows eight at a time (one panel per tile: eight accumulators), then four
// against two panels, then the last one to three against two or three panels, so that
// few rows still keep enough FMA chains in flight. Measured on all of the model's layer
// weights against the GGUF-order kernels: 8 rows x1 beat 4 x2 twice by 13%; 4 rows x2
// beat x1 by 20%; five to seven rows as 4 x2 plus the rest about equal to GGUF order.
template <class T>
void panel_rows(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
                float* y, int64_t ldy) {
    for (int64_t p0 = p_begin; p0 < p_end; p0 += kPanelGroup) {
        const int64_t p1 = std::min(p_end, p0 + kPanelGroup);
        int64_t t = 0;
        for (; t + 8 <= n_x; t += 8) panels_against<T, 8, 1>(w, p0, p1, x + t * ldx, ldx, y + t * ldy, ldy);
        if (n_x - t >= 4) {
            panels_against<T, 4, 2>(w, p0, p1, x + t * ldx, ldx, y + t * ldy, ldy);
            t += 4;
        }
        const float* xt = x + t * ldx;
        float* yt = y + t * ldy;
        switch (n_x - t) {
        case 3: panels_against<T, 3, 2>(w, p0, p1, xt, ldx, yt, ldy); break;
        case 2: panels_against<T, 2, 2>(w, p0, p1, xt, ldx, yt, ldy); break;
        case 1: panels_against<T, 1, 3>(w, p0, p1, xt, ldx, yt, ldy); break;
        default: break;
        }
    }
}

} // namespace

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy) {
    if (w.type() == DType::Q4_1) panel_rows<Q4_1P>(w, p_begin, p_end, x, ldx, n_x, y, ldy);
    else panel_rows<Q8_0P>(w, p_begin, p_end, x, ldx, n_x, y, ldy);
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy) {
    ref::panel_dot(w, p_begin, p_end, x, ldx, n_x, y, ldy);
}
} // namespace arbor::avx2

#endif
