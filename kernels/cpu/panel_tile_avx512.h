// The 512-bit pieces shared by the AVX-512 panel products (panel_dot_avx512.cpp with
// 16-bit codes, panel_bytes_avx512.cpp with 8-bit ones), each unit built with the same
// AVX-512 flags: two panels' halves as one register, the store and fold of a tile's
// sixteen rows, and the schedule of tiles. Internal linkage, as panel_tile_avx2.h.
#pragma once

#if !(defined(__AVX512F__) && defined(__AVX512DQ__))
#error "panel_tile_avx512.h needs -mavx512f -mavx512dq"
#endif

#include "arbor/kernels/panel_weights.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace arbor::panel_simd {
namespace {

inline __m512i pair_of(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }
inline __m512 pair_of(__m256 lo, __m256 hi) { return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1); }

// The first `rows` of sixteen outputs (two panels' rows; fewer only in a matrix's last).
inline void store_rows16(float* y, __m512 v, int64_t rows) {
    if (rows >= 2 * kPanelRows) {
        _mm512_storeu_ps(y, v);
        return;
    }
    _mm512_mask_storeu_ps(y, __mmask16(rows <= 0 ? 0 : (1u << rows) - 1), v);
}

// The contract's fold of one part's integer sums into sixteen rows' accumulator:
// acc = fma(float(sum), dw * d, acc), then with a min acc = fma(mw, s, acc).
template <bool HasMin>
inline __m512 fold16(__m512 acc, __m512i sum, __m512 dw, __m512 mw, float d, float s) {
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(d)), acc);
    if constexpr (HasMin) acc = _mm512_fmadd_ps(mw, _mm512_set1_ps(s), acc);
    return acc;
}

// Panels per group that every group of activation rows passes over while the group stays
// in L1 or L2; a multiple of the four- and eight-panel tiles.
constexpr int64_t kPanelGroup16 = 8;

// The tiles of a product of panels [p_begin, p_end) with n_x activation rows: for each
// group of kPanelGroup16 panels, tiles.template operator()<MR>(p0, p1, t) for rows from t
// six at a time, but the last seven to ten as 4 + the rest (a lone tile of one or two
// rows reads the weights for little work: eight chats' decode steps).
template <class Tiles>
inline void tile_schedule16(int64_t p_begin, int64_t p_end, int64_t n_x, Tiles&& tiles) {
    for (int64_t p0 = p_begin; p0 < p_end; p0 += kPanelGroup16) {
        const int64_t p1 = std::min(p_end, p0 + kPanelGroup16);
        auto run = [&]<int MR>(int64_t t) { tiles.template operator()<MR>(p0, p1, t); };
        int64_t t = 0;
        for (; n_x - t > 10; t += 6) run.template operator()<6>(t);
        if (n_x - t > 6) {
            run.template operator()<4>(t);
            t += 4;
        }
        switch (n_x - t) {
        case 6: run.template operator()<6>(t); break;
        case 5: run.template operator()<5>(t); break;
        case 4: run.template operator()<4>(t); break;
        case 3: run.template operator()<3>(t); break;
        case 2: run.template operator()<2>(t); break;
        case 1: run.template operator()<1>(t); break;
        default: break;
        }
    }
}

} // namespace
} // namespace arbor::panel_simd
