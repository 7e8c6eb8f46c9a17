// AVX2/FMA float-activation products (compiled with -mavx2 -mfma -mf16c), following
// the operation order in float_dot.h. A tile of NW weight rows x NX activation rows keeps
// 2 * NW * NX accumulators in registers; each chunk of 8 weights is dequantized once
// for the NX activation rows.
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
// `Scales`; chunk<C> gives elements 8C .. 8C + 7 of block b as floats. kBlock / 8 is
// even, so a chunk's accumulator (global chunk index % 2) is C % 2. kDecodeRows weight
// rows go together against a single activation row.
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

// Plain floats, in blocks of two chunks; rows need not be a multiple of 16 long.
struct F32W {
    static constexpr int kDecodeRows = 2;
    static constexpr int kBlock = 16;
    static constexpr size_t kBytes = kBlock * sizeof(float);
    struct Scales {};
    static Scales scales(const uint8_t*, int64_t) { return {}; }
    template <int C>
    static __m256 chunk(const uint8_t* row, int64_t b, const Scales&) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + b * kBlock + 8 * C);
    }
};

template <class T, int NW, int NX>
void tile(int64_t n, const uint8_t* w, size_t row_stride, const float* x, int64_t ldx, float* y, int64_t ldy) {
    constexpr int kChunks = T::kBlock / 8;
    static_assert(kChunks % 2 == 0, "a block must hold an even number of chunks");
    const uint8_t* rows[NW];
    for (int r = 0; r < NW; ++r) rows[r] = w + size_t(r) * row_stride;
    __m256 acc[2][NW][NX];
    for (auto& half : acc)
        for (auto& row : half)
            for (auto& a : row) a = _mm256_setzero_ps();

    const int64_t nb = n / T::kBlock;
    for (int64_t b = 0; b < nb; ++b) {
        // Several interleaved rows defeat the hardware prefetcher on large matrices: fetch
        // the same place of the next tile's rows (a prefetch past the end is harmless).
        for (int r = 0; r < NW; ++r) _mm_prefetch(rows[r] + NW * row_stride + b * T::kBytes, _MM_HINT_T0);
        typename T::Scales s[NW];
        for (int r = 0; r < NW; ++r) s[r] = T::scales(rows[r], b);
        const float* xb = x + b * T::kBlock;
        [&]<int... C>(std::integer_sequence<int, C...>) {
            auto step = [&]<int K>() {
                __m256 wv[NW];
                for (int r = 0; r < NW; ++r) wv[r] = T::template chunk<K>(rows[r], b, s[r]);
                for (int j = 0; j < NX; ++j) {
                    const __m256 xv = _mm256_loadu_ps(xb + j * ldx + 8 * K);
                    for (int r = 0; r < NW; ++r) acc[K % 2][r][j] = _mm256_fmadd_ps(wv[r], xv, acc[K % 2][r][j]);
                }
            };
            (step.template operator()<C>(), ...);
        }(std::make_integer_sequence<int, kChunks>{});
    }

    // Only float rows have elements past the last whole block: one more chunk (an even
    // global index, so accumulator 0), then single elements.
    int64_t done = nb * T::kBlock;
    if constexpr (std::is_same_v<T, F32W>) {
        if (n - done >= 8) {
            for (int j = 0; j < NX; ++j) {
                const __m256 xv = _mm256_loadu_ps(x + j * ldx + done);
                for (int r = 0; r < NW; ++r)
                    acc[0][r][j] = _mm256_fmadd_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(rows[r]) + done), xv,
                                                   acc[0][r][j]);
            }
            done += 8;
        }
    }
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) {
            float s = hsum(_mm256_add_ps(acc[0][r][j], acc[1][r][j]));
            if constexpr (std::is_same_v<T, F32W>) {
                const float* wr = reinterpret_cast<const float*>(rows[r]);
                for (int64_t i = done; i < n; ++i) s = std::fma(wr[i], x[j * ldx + i], s);
            }
            y[j * ldy + r] = s;
        }
}

// All n_w weight rows against NX activation rows, NW weight rows at a time.
template <class T, int NW, int NX>
void rows_against(int64_t n, const uint8_t* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx, float* y,
                  int64_t ldy) {
    int64_t r = 0;
    for (; r + NW <= n_w; r += NW) tile<T, NW, NX>(n, w + size_t(r) * row_stride, row_stride, x, ldx, y + r, ldy);
    for (; r < n_w; ++r) tile<T, 1, NX>(n, w + size_t(r) * row_stride, row_stride, x, ldx, y + r, ldy);
}

// Activation rows four at a time against one weight row (each weight chunk serves four
// rows), then the last two or three the same way; a single row (decode) against
// kDecodeRows weight rows at a time. Measured: one weight row beats two for every
// group of two to four activation rows.
template <class T>
void tiles(int64_t n, const uint8_t* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx, int64_t n_x,
           float* y, int64_t ldy) {
    int64_t j = 0;
    for (; j + 4 <= n_x; j += 4) rows_against<T, 1, 4>(n, w, row_stride, n_w, x + j * ldx, ldx, y + j * ldy, ldy);
    switch (n_x - j) {
    case 3: rows_against<T, 1, 3>(n, w, row_stride, n_w, x + j * ldx, ldx, y + j * ldy, ldy); break;
    case 2: rows_against<T, 1, 2>(n, w, row_stride, n_w, x + j * ldx, ldx, y + j * ldy, ldy); break;
    case 1: rows_against<T, T::kDecodeRows, 1>(n, w, row_stride, n_w, x + j * ldx, ldx, y + j * ldy, ldy); break;
    default: break;
    }
}

// Rows dequantized per group into the buffer: small enough to stay in L2 while the
// activation rows stream past.
constexpr int64_t kGroupRows = 16;

} // namespace

void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, std::vector<float>& buffer) {
    const auto* bytes = static_cast<const uint8_t*>(w);
    switch (type) {
    case DType::Q4_0: tiles<Q4_0W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
    case DType::Q4_1: tiles<Q4_1W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
    case DType::Q8_0: tiles<Q8_0W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
    case DType::F32: tiles<F32W>(n, bytes, row_stride, n_w, x, ldx, n_x, y, ldy); return;
    default: break;
    }
    buffer.resize(static_cast<size_t>(kGroupRows * n));
    for (int64_t r0 = 0; r0 < n_w; r0 += kGroupRows) {
        const int64_t rows = std::min(kGroupRows, n_w - r0);
        for (int64_t i = 0; i < rows; ++i)
            dequantize_row(type, bytes + size_t(r0 + i) * row_stride, &buffer[size_t(i * n)], n, Isa::Avx2);
        tiles<F32W>(n, reinterpret_cast<const uint8_t*>(buffer.data()), size_t(n) * sizeof(float), rows, x, ldx, n_x,
                    y + r0, ldy);
    }
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
void float_dot_tile(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x,
                    int64_t ldx, int64_t n_x, float* y, int64_t ldy, std::vector<float>& buffer) {
    ref::float_dot_tile(type, n, w, row_stride, n_w, x, ldx, n_x, y, ldy, buffer);
}
} // namespace arbor::avx2

#endif
