// AVX2/FMA float-activation products (compiled with -mavx2 -mfma -mf16c), following
// the operation order in float_dot.h.
// - Up to four activation rows (Q4_0, Q4_1, Q8_0 and F32 weights): tiles of NW weight
//   rows x NX activation rows dequantize each weight chunk in registers for the NX rows
//   and keep both halves' accumulators (2 * NW * NX).
// - Five to 39 rows of Q4_0, Q4_1 or Q8_0: one weight row at a time, each chunk
//   dequantized in registers once for eight activation rows (eight accumulators, one
//   half and then the other).
// - Otherwise: float tiles of three weight rows x four activation rows sweep the first
//   half and then the second with twelve accumulators, over float rows as they are or
//   over a group of rows dequantized once into a buffer.
#include "arbor/kernels/float_dot.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"

#include "quant/avx2_common.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>

namespace arbor::avx2 {

using quant::avx2::hsum;
namespace {

// Weight formats with in-register dequantization. kBlock elements (kBytes bytes) share
// `Scales`; chunk<C> gives elements 8C .. 8C + 7 of block b as floats. A block is the
// contract's unit. kDecodeRows weight rows go together against a single activation row.
template <class Block>
inline const Block& block(const uint8_t* row, int64_t b) {
    return reinterpret_cast<const Block*>(row)[b];
}

// Bytes 8 * (C % 2) .. + 7 of a nibble block widened to 32 bits; the low nibbles are
// elements 0-15 (C = 0, 1), the high nibbles elements 16-31 (C = 2, 3).
template <int C>
inline __m256i nibbles(const uint8_t* qs) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * (C % 2))));
    return C < 2 ? _mm256_and_si256(v, _mm256_set1_epi32(0x0f)) : _mm256_srli_epi32(v, 4);
}

// The 32-element block types with one scale d (element = d * code).
template <class Block, int DecodeRows>
struct ScaledBlock {
    static constexpr int kDecodeRows = DecodeRows;
    static constexpr int kBlock = 32;
    static constexpr size_t kBytes = sizeof(Block);
    struct Scales { __m256 d; };
    static Scales scales(const uint8_t* row, int64_t b) { return {_mm256_set1_ps(_cvtsh_ss(block<Block>(row, b).d))}; }
};

struct Q4_0W : ScaledBlock<BlockQ4_0, 2> {
    template <int C>
    static __m256 chunk(const uint8_t* row, int64_t b, const Scales& s) {
        const __m256i q = _mm256_sub_epi32(nibbles<C>(block<BlockQ4_0>(row, b).qs), _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), s.d);
    }
};

struct Q4_1W {
    static constexpr int kDecodeRows = 2;
    static constexpr int kBlock = 32;
    static constexpr size_t kBytes = sizeof(BlockQ4_1);
    struct Scales { __m256 d, m; };
    static Scales scales(const uint8_t* row, int64_t b) {
        const __m128 dm = quant::avx2::load_half_pair(&block<BlockQ4_1>(row, b).d);
        return {_mm256_broadcastss_ps(dm), _mm256_broadcastss_ps(_mm_movehdup_ps(dm))};
    }
    template <int C>
    static __m256 chunk(const uint8_t* row, int64_t b, const Scales& s) {
        return _mm256_fmadd_ps(_mm256_cvtepi32_ps(nibbles<C>(block<BlockQ4_1>(row, b).qs)), s.d, s.m);
    }
};

// One weight row at a time for decode: two measured slower here.
struct Q8_0W : ScaledBlock<BlockQ8_0, 1> {
    template <int C>
    static __m256 chunk(const uint8_t* row, int64_t b, const Scales& s) {
        const int8_t* qs = block<BlockQ8_0>(row, b).qs + 8 * C;
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), s.d);
    }
};

// Plain floats: a block is one chunk; rows need not be a multiple of 8 long.
struct F32W {
    static constexpr int kDecodeRows = 2;
    static constexpr int kBlock = 8;
    static constexpr size_t kBytes = kBlock * sizeof(float);
    struct Scales {};
    static Scales scales(const uint8_t*, int64_t) { return {}; }
    template <int C>
    static __m256 chunk(const uint8_t* row, int64_t b, const Scales&) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + b * kBlock + 8 * C);
    }
};

// The elements after the whole units (plain float rows only), in order, onto s.
inline float trailing(float s, const float* w, const float* x, int64_t begin, int64_t n) {
    for (int64_t i = begin; i < n; ++i) s = std::fma(w[i], x[i], s);
    return s;
}

template <class T, int NW, int NX>
void tile(int64_t n, const uint8_t* w, size_t row_stride, const float* x, int64_t ldx, float* y, int64_t ldy) {
    const uint8_t* rows[NW];
    for (int r = 0; r < NW; ++r) rows[r] = w + size_t(r) * row_stride;
    __m256 acc[2][NW][NX];
    for (auto& half : acc)
        for (auto& row : half)
            for (auto& a : row) a = _mm256_setzero_ps();

    // One pointer per activation row, indexed by the block's offset: fewer address
    // registers than row-times-stride arithmetic (which spilled with four rows).
    const float* xr[NX];
    for (int j = 0; j < NX; ++j) xr[j] = x + j * ldx;

    // Block b into the accumulators of half H.
    auto block = [&]<int H>(int64_t b) {
        typename T::Scales s[NW];
        for (int r = 0; r < NW; ++r) s[r] = T::scales(rows[r], b);
        const int64_t at = b * T::kBlock;
        [&]<int... C>(std::integer_sequence<int, C...>) {
            auto step = [&]<int K>() {
                __m256 wv[NW];
                for (int r = 0; r < NW; ++r) wv[r] = T::template chunk<K>(rows[r], b, s[r]);
                for (int j = 0; j < NX; ++j) {
                    const __m256 xv = _mm256_loadu_ps(xr[j] + at + 8 * K);
                    for (int r = 0; r < NW; ++r) acc[H][r][j] = _mm256_fmadd_ps(wv[r], xv, acc[H][r][j]);
                }
            };
            (step.template operator()<C>(), ...);
        }(std::make_integer_sequence<int, T::kBlock / 8>{});
    };

    // The two halves side by side, two independent chains per pair; the second half has
    // one block more when the count is odd.
    const int64_t nb = n / T::kBlock, half = nb / 2;
    for (int64_t b = 0; b < half; ++b) {
        // Several interleaved rows defeat the hardware prefetcher on large matrices: fetch
        // the same places of the next tile's rows (a prefetch past the end is harmless).
        if constexpr (!std::is_same_v<T, F32W>)
            for (int r = 0; r < NW; ++r) {
                _mm_prefetch(rows[r] + NW * row_stride + b * T::kBytes, _MM_HINT_T0);
                _mm_prefetch(rows[r] + NW * row_stride + (half + b) * T::kBytes, _MM_HINT_T0);
            }
        block.template operator()<0>(b);
        block.template operator()<1>(half + b);
    }
    if (nb % 2) block.template operator()<1>(nb - 1);

    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) {
            float s = hsum(_mm256_add_ps(acc[0][r][j], acc[1][r][j]));
            if constexpr (std::is_same_v<T, F32W>)
                s = trailing(s, reinterpret_cast<const float*>(rows[r]), x + j * ldx, nb * T::kBlock, n);
            y[j * ldy + r] = s;
        }
}

// All n_w weight rows against NX activation rows, NW weight rows at a time (the last
// one or two by themselves).
template <int NW, int NX, class Tile>
void rows_against(int64_t n_w, Tile&& tile) {
    int64_t r = 0;
    for (; r + NW <= n_w; r += NW) tile.template operator()<NW, NX>(r);
    for (; r < n_w; ++r) tile.template operator()<1, NX>(r);
}

// Activation rows in groups of four, then the last one to three: four-row tiles from
// `Four`, a single row against kDecodeRows weight rows, otherwise NW weight rows.
template <int NW, int DecodeRows, int Four, class Tile>
void by_activation_rows(int64_t n_w, int64_t n_x, Tile&& tile) {
    int64_t j = 0;
    auto at = [&]<int TW, int TX>(int64_t r) { tile.template operator()<TW, TX>(r, j); };
    for (; j + 4 <= n_x; j += 4) rows_against<Four, 4>(n_w, at);
    switch (n_x - j) {
    case 3: rows_against<NW, 3>(n_w, at); break;
    case 2: rows_against<NW, 2>(n_w, at); break;
    case 1: rows_against<DecodeRows, 1>(n_w, at); break;
    default: break;
    }
}

// One to four activation rows: one weight row at a time against two to four activation
// rows (measured faster than two), kDecodeRows against one.
template <class T>
void in_registers(int64_t n, const uint8_t* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                  int64_t n_x, float* y, int64_t ldy) {
    by_activation_rows<1, T::kDecodeRows, 1>(n_w, n_x, [&]<int TW, int TX>(int64_t r, int64_t j) {
        tile<T, TW, TX>(n, w + size_t(r) * row_stride, row_stride, x + j * ldx, ldx, y + j * ldy + r, ldy);
    });
}

// Blocks [b0, b1) of one weight row against NX activation rows, dequantized once in
// registers for all of them: one accumulator per activation row.
template <class T, int NX>
inline void wide_half(const uint8_t* row, int64_t b0, int64_t b1, const float* const (&xr)[NX], __m256 (&acc)[NX]) {
    for (auto& a : acc) a = _mm256_setzero_ps();
    for (int64_t b = b0; b < b1; ++b) {
        const typename T::Scales s = T::scales(row, b);
        const int64_t at = b * T::kBlock;
        [&]<int... C>(std::integer_sequence<int, C...>) {
            auto step = [&]<int K>() {
                const __m256 wv = T::template chunk<K>(row, b, s);
                for (int j = 0; j < NX; ++j) acc[j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xr[j] + at + 8 * K), acc[j]);
            };
            (step.template operator()<C>(), ...);
        }(std::make_integer_sequence<int, T::kBlock / 8>{});
    }
}

// n_w weight rows against NX activation rows, one weight row at a time with each chunk
// dequantized once for all NX: a group of weight rows sweeps the first half (whose
// activations then stay in L1 even for long rows), parks its accumulators, and sweeps the second.
template <class T, int NX>
void wide(int64_t n, const uint8_t* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx, float* y,
          int64_t ldy) {
    constexpr int64_t kGroup = 16;
    const int64_t nb = n / T::kBlock, half = nb / 2;
    const float* xr[NX];
    for (int j = 0; j < NX; ++j) xr[j] = x + j * ldx;
    __m256 firsts[kGroup][NX];
    for (int64_t r0 = 0; r0 < n_w; r0 += kGroup) {
        const int64_t rows = std::min(kGroup, n_w - r0);
        for (int64_t i = 0; i < rows; ++i) {
            const uint8_t* row = w + size_t(r0 + i) * row_stride;
            // The same row of the next group, whole: the first pass's half-row strides
            // hide the rows from the hardware prefetcher (a prefetch past the end is
            // harmless; measured 2-3% faster over all of a step's weights with 8 rows).
            const uint8_t* ahead = row + kGroup * row_stride;
            for (size_t k = 0; k < row_stride; k += 64) _mm_prefetch(ahead + k, _MM_HINT_T0);
            wide_half<T, NX>(row, 0, half, xr, firsts[i]);
        }
        for (int64_t i = 0; i < rows; ++i) {
            __m256 second[NX];
            wide_half<T, NX>(w + size_t(r0 + i) * row_stride, half, nb, xr, second);
            for (int j = 0; j < NX; ++j) y[j * ldy + r0 + i] = hsum(_mm256_add_ps(firsts[i][j], second[j]));
        }
    }
}

// Activation rows in groups of eight through `wide`, then the last five to seven the same
// way; the last one to four in the small tiles (five measured faster wide).
template <class T>
void wide_rows(int64_t n, const uint8_t* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
               int64_t n_x, float* y, int64_t ldy) {
    int64_t j = 0;
    for (; j + 8 <= n_x; j += 8) wide<T, 8>(n, w, row_stride, n_w, x + j * ldx, ldx, y + j * ldy, ldy);
    const float* xj = x + j * ldx;
    float* yj = y + j * ldy;
    switch (n_x - j) {
    case 7: wide<T, 7>(n, w, row_stride, n_w, xj, ldx, yj, ldy); break;
    case 6: wide<T, 6>(n, w, row_stride, n_w, xj, ldx, yj, ldy); break;
    case 5: wide<T, 5>(n, w, row_stride, n_w, xj, ldx, yj, ldy); break;
    case 0: break;
    default: in_registers<T>(n, w, row_stride, n_w, xj, ldx, n_x - j, yj, ldy); break;
    }
}

// One half of NW float rows against NX activation rows: elements [begin, end).
template <int NW, int NX>
inline void sweep(const float* w, int64_t ldw, const float* x, int64_t ldx, int64_t begin, int64_t end,
                  __m256 (&out)[NW][NX]) {
    __m256 acc[NW][NX];
    for (auto& row : acc)
        for (auto& a : row) a = _mm256_setzero_ps();
    for (int64_t i = begin; i < end; i += 8) {
        __m256 wv[NW];
        for (int r = 0; r < NW; ++r) wv[r] = _mm256_loadu_ps(w + r * ldw + i);
        for (int j = 0; j < NX; ++j) {
            const __m256 xv = _mm256_loadu_ps(x + j * ldx + i);
            for (int r = 0; r < NW; ++r) acc[r][j] = _mm256_fmadd_ps(wv[r], xv, acc[r][j]);
        }
    }
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) out[r][j] = acc[r][j];
}

// NW float rows (ldw floats apart) against NX activation rows: one half, then the other.
template <int NW, int NX>
void float_tile(int64_t n, FloatDotSplit parts, const float* w, int64_t ldw, const float* x, int64_t ldx, float* y,
                int64_t ldy) {
    __m256 first[NW][NX], second[NW][NX];
    sweep<NW, NX>(w, ldw, x, ldx, 0, parts.split, first);
    sweep<NW, NX>(w, ldw, x, ldx, parts.split, parts.whole, second);
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j)
            y[j * ldy + r] = trailing(hsum(_mm256_add_ps(first[r][j], second[r][j])), w + r * ldw, x + j * ldx,
                                      parts.whole, n);
}

// Spreads prefetches of a byte range over `calls` calls of step(): the next group's
// quantized weights come from memory while the current group's tiles compute, instead of
// stalling its dequantization (measured 2-7% more aggregate decode with 8 chats).
class SpreadPrefetch {
public:
    SpreadPrefetch() = default;
    SpreadPrefetch(const uint8_t* begin, const uint8_t* end, int64_t calls)
        : next_(begin), end_(end), lines_per_call_((end - begin + 63) / 64 / std::max<int64_t>(calls, 1) + 1) {}
    void step() {
        for (int64_t i = 0; i < lines_per_call_ && next_ < end_; ++i, next_ += 64) _mm_prefetch(next_, _MM_HINT_T0);
    }

private:
    const uint8_t* next_ = nullptr;
    const uint8_t* end_ = nullptr;
    int64_t lines_per_call_ = 0;
};

// Float rows against any number of activation rows: three weight rows by four activation
// rows wherever the counts allow.
void float_tiles(int64_t n, FloatDotSplit parts, const float* w, int64_t ldw, int64_t n_w, const float* x,
                 int64_t ldx, int64_t n_x, float* y, int64_t ldy, SpreadPrefetch prefetch = {}) {
    by_activation_rows<3, 3, 3>(n_w, n_x, [&]<int TW, int TX>(int64_t r, int64_t j) {
        prefetch.step();
        float_tile<TW, TX>(n, parts, w + r * ldw, ldw, x + j * ldx, ldx, y + j * ldy + r, ldy);
    });
}

// A row dequantized through its type's in-register chunks (exactly dequantize_row's
// values; faster than the generic dequantization for these types).
template <class T>
void dequantize(const uint8_t* row, int64_t n, float* out) {
    for (int64_t b = 0; b < n / T::kBlock; ++b) {
        const typename T::Scales s = T::scales(row, b);
        [&]<int... C>(std::integer_sequence<int, C...>) {
            (_mm256_storeu_ps(out + b * T::kBlock + 8 * C, T::template chunk<C>(row, b, s)), ...);
        }(std::make_integer_sequence<int, T::kBlock / 8>{});
    }
}

void dequantize_any(DType type, const uint8_t* row, int64_t n, float* out) {
    switch (type) {
    case DType::Q4_0: dequantize<Q4_0W>(row, n, out); return;
    case DType::Q4_1: dequantize<Q4_1W>(row, n, out); return;
    case DType::Q8_0: dequantize<Q8_0W>(row, n, out); return;
    default: dequantize_row(type, row, out, n, Isa::Avx2); return;
    }
}

// Activation rows from which one dequantization into a buffer shared by all rows beats
// dequantizing in registers for every eight (measured with the model's FFN and output
// weights: 32 rows 0-10% faster in registers, 48 and 64 rows 3-10% faster through the buffer).
constexpr int64_t kBufferedFrom = 40;

// Float weight rows need no dequantization: from five activation rows the three-by-four
// float tiles beat the small ones.
constexpr int64_t kFloatTilesFrom = 5;

// Weight rows dequantized per group: a multiple of the tile's three rows, about 128 KiB
// of floats, so the group stays in L2 while each set of activation rows passes over it.
int64_t group_rows(int64_t n) {
    return std::max<int64_t>(3, (int64_t(128) << 10) / (n * int64_t(sizeof(float))) / 3 * 3);
}

} // namespace

void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer) {
    const auto* bytes = static_cast<const uint8_t*>(w);
    if (n_x < kBufferedFrom) {
        switch (type) {
        case DType::Q4_0: wide_rows<Q4_0W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
        case DType::Q4_1: wide_rows<Q4_1W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
        case DType::Q8_0: wide_rows<Q8_0W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
        default: break;
        }
    }
    if (type == DType::F32 && n_x < kFloatTilesFrom) {
        in_registers<F32W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy);
        return;
    }
    const FloatDotSplit parts = float_dot_split(type, n);
    if (type == DType::F32) {
        float_tiles(n, parts, static_cast<const float*>(w), int64_t(row_stride / sizeof(float)), n_w, x, ldx, n_x, y,
                    ldy);
        return;
    }
    const int64_t group = group_rows(n);
    buffer.resize(size_t(std::min(group, n_w) * n));
    for (int64_t r0 = 0; r0 < n_w; r0 += group) {
        const int64_t rows = std::min(group, n_w - r0);
        for (int64_t i = 0; i < rows; ++i)
            dequantize_any(type, bytes + size_t(r0 + i) * row_stride, n, &buffer[size_t(i * n)]);
        const int64_t next_rows = std::min(group, n_w - r0 - rows);
        const int64_t tiles = (rows + 2) / 3 * ((n_x + 3) / 4);
        const uint8_t* next = bytes + size_t(r0 + rows) * row_stride;
        float_tiles(n, parts, buffer.data(), n, rows, x, ldx, n_x, y + r0, ldy,
                    SpreadPrefetch(next, next + size_t(next_rows) * row_stride, tiles));
    }
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, AlignedFloats& buffer) {
    ref::float_dot_tile(type, n, w, row_stride, n_w, x, ldx, n_x, y, ldy, buffer);
}
} // namespace arbor::avx2

#endif
