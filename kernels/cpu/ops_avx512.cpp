// AVX-512 variants of the attention kernels (cpu_ops.h): AVX2's tiles on sixteen lanes
// instead of eight, with 32 registers for the accumulators. Each lane still runs the
// contract's chain for its score or value element (one fused multiply-add per element in
// order, F16 and Q8_0 converted exactly first), so the bits equal AVX2's and the tile
// shapes may differ. Compiled with AVX2's flags plus -mavx512f -mavx512bw -mavx512dq
// -mavx512vl; chosen at run time only where the CPU has them (isa_supported in quant.h).
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/quant.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>

namespace arbor::avx512 {

bool available() {
    static const bool ok = isa_supported(Isa::Avx512);
    return ok;
}

namespace {

inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load16(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// Sixteen keys (columns j..j+15 of element d) or sixteen elements of a value row, as floats.
template <class E>
struct Columns {
    const E* keys;
    int64_t ld;
    __m512 at(int64_t d, int64_t j) const { return load16(keys + d * ld + j); }
};
struct Q8Columns {
    const int8_t* keys;
    const uint16_t* scales;
    int64_t ld;
    __m512 at(int64_t d, int64_t j) const {
        return _mm512_mul_ps(load16(scales + d / kQ8BlockSize * ld + j), load16(keys + d * ld + j));
    }
};
template <class E>
struct Rows {
    const E* rows;
    int64_t dim;
    __m512 at(int64_t j, int64_t col) const { return load16(rows + j * dim + col); }
};
// Sixteen elements lie in one block of 32 (col a multiple of sixteen): one scale.
struct Q8Rows {
    const int8_t* rows;
    const uint16_t* scales;
    int64_t dim;
    __m512 at(int64_t j, int64_t col) const {
        const float scale = _cvtsh_ss(scales[j * (dim / kQ8BlockSize) + col / kQ8BlockSize]);
        return _mm512_mul_ps(_mm512_set1_ps(scale), load16(rows + j * dim + col));
    }
};

// NQ heads x NG groups of sixteen key columns from column g (a multiple of sixteen); the
// columns in [lo, hi) go to out (column lo at out[0]).
template <int NQ, int NG, class K>
void column_tile(const float* q, const K& keys, int64_t g, int64_t lo, int64_t hi, int64_t dim, float* out,
                 int64_t ldo) {
    __m512 acc[NQ][NG];
    for (auto& row : acc)
        for (auto& a : row) a = _mm512_setzero_ps();
    for (int64_t d = 0; d < dim; ++d) {
        __m512 k[NG];
        for (int c = 0; c < NG; ++c) k[c] = keys.at(d, g + 16 * c);
        for (int h = 0; h < NQ; ++h) {
            const __m512 qd = _mm512_set1_ps(q[h * dim + d]);
            for (int c = 0; c < NG; ++c) acc[h][c] = _mm512_fmadd_ps(qd, k[c], acc[h][c]);
        }
    }
    for (int c = 0; c < NG; ++c) {
        const int64_t from = g + 16 * c;
        if (from >= lo) {
            // Lanes past hi masked off (a group at the range's end).
            const __mmask16 keep = hi - from >= 16 ? __mmask16(0xffff) : __mmask16((1u << (hi - from)) - 1);
            for (int h = 0; h < NQ; ++h) _mm512_mask_storeu_ps(out + h * ldo + (from - lo), keep, acc[h][c]);
            continue;
        }
        // The group holding lo: its columns from lo on, within hi.
        alignas(64) float lanes[16];
        const int64_t end = std::min(from + 16, hi);
        for (int h = 0; h < NQ; ++h) {
            _mm512_store_ps(lanes, acc[h][c]);
            for (int64_t j = lo; j < end; ++j) out[h * ldo + (j - lo)] = lanes[j - from];
        }
    }
}

// The groups of sixteen columns that hold [first, first + n), two at a time, the last alone.
template <int NQ, class K>
void column_groups(const float* q, const K& keys, int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    const int64_t end = first + n;
    int64_t g = first / 16 * 16;
    for (; g + 16 < end; g += 32) column_tile<NQ, 2>(q, keys, g, first, end, dim, out, ldo);
    if (g < end) column_tile<NQ, 1>(q, keys, g, first, end, dim, out, ldo);
}

// Calls f.template operator()<N>(h) for heads h.. in tiles of up to eight (sixteen
// accumulators of two key groups, the keys and a query element fit the 32 registers).
template <class F>
void by_eight(int64_t n_q, F&& f) {
    int64_t h = 0;
    for (; h + 8 <= n_q; h += 8) f.template operator()<8>(h);
    switch (n_q - h) {
    case 7: f.template operator()<7>(h); break;
    case 6: f.template operator()<6>(h); break;
    case 5: f.template operator()<5>(h); break;
    case 4: f.template operator()<4>(h); break;
    case 3: f.template operator()<3>(h); break;
    case 2: f.template operator()<2>(h); break;
    case 1: f.template operator()<1>(h); break;
    default: break;
    }
}

template <class K>
void column_heads(const float* q, int64_t n_q, const K& keys, int64_t first, int64_t n, int64_t dim, float* out,
                  int64_t ldo) {
    by_eight(n_q, [&]<int NQ>(int64_t h) { column_groups<NQ>(q + h * dim, keys, first, n, dim, out + h * ldo, ldo); });
}

// NQ heads x NC chunks of sixteen output elements, the rows in order.
template <int NQ, int NC, class R>
void value_tile(const float* weights, int64_t ldw, const R& rows, int64_t col, int64_t n_rows, int64_t dim,
                float* out) {
    __m512 acc[NQ][NC];
    for (int h = 0; h < NQ; ++h)
        for (int c = 0; c < NC; ++c) acc[h][c] = _mm512_loadu_ps(out + h * dim + 16 * c);
    for (int64_t j = 0; j < n_rows; ++j) {
        __m512 w[NQ];
        for (int h = 0; h < NQ; ++h) w[h] = _mm512_set1_ps(weights[h * ldw + j]);
        for (int c = 0; c < NC; ++c) {
            const __m512 v = rows.at(j, col + 16 * c);
            for (int h = 0; h < NQ; ++h) acc[h][c] = _mm512_fmadd_ps(w[h], v, acc[h][c]);
        }
    }
    for (int h = 0; h < NQ; ++h)
        for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out + h * dim + 16 * c, acc[h][c]);
}

// Up to four heads x four chunks (sixteen accumulators, four weights and a chunk), the
// last one to three chunks as one tile.
template <int NQ, class R>
void value_rows(const float* weights, int64_t ldw, const R& rows, int64_t n_rows, int64_t dim, float* out) {
    int64_t c = 0;
    for (; c + 64 <= dim; c += 64) value_tile<NQ, 4>(weights, ldw, rows, c, n_rows, dim, out + c);
    switch ((dim - c) / 16) {
    case 3: value_tile<NQ, 3>(weights, ldw, rows, c, n_rows, dim, out + c); break;
    case 2: value_tile<NQ, 2>(weights, ldw, rows, c, n_rows, dim, out + c); break;
    case 1: value_tile<NQ, 1>(weights, ldw, rows, c, n_rows, dim, out + c); break;
    default: break;
    }
}

template <class R>
void value_heads(const float* weights, int64_t ldw, int64_t n_q, const R& rows, int64_t n_rows, int64_t dim,
                 float* out) {
    int64_t h = 0;
    auto run = [&]<int NQ>() { value_rows<NQ>(weights + h * ldw, ldw, rows, n_rows, dim, out + h * dim); };
    for (; h + 4 <= n_q; h += 4) run.template operator()<4>();
    switch (n_q - h) {
    case 3: run.template operator()<3>(); break;
    case 2: run.template operator()<2>(); break;
    case 1: run.template operator()<1>(); break;
    default: break;
    }
}

// The column kernels read whole groups of sixteen columns: other strides go to AVX2's.
bool whole_groups(int64_t ld, int64_t first, int64_t n) { return ld % 16 == 0 && first + n <= ld; }

} // namespace

void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (!whole_groups(ld, first, n)) return avx2::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
    column_heads(q, n_q, Columns<float>{keys, ld}, first, n, dim, out, ldo);
}

void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (!whole_groups(ld, first, n)) return avx2::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
    column_heads(q, n_q, Columns<uint16_t>{keys, ld}, first, n, dim, out, ldo);
}

void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    if (!whole_groups(ld, first, n) || dim % kQ8BlockSize != 0)
        return avx2::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
    column_heads(q, n_q, Q8Columns{keys, scales, ld}, first, n, dim, out, ldo);
}

void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (dim % 16 != 0) return avx2::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
    value_heads(weights, ldw, n_q, Rows<float>{rows, dim}, n_rows, dim, out);
}

void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (dim % 16 != 0) return avx2::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
    value_heads(weights, ldw, n_q, Rows<uint16_t>{rows, dim}, n_rows, dim, out);
}

void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    if (dim % kQ8BlockSize != 0)
        return avx2::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
    value_heads(weights, ldw, n_q, Q8Rows{rows, scales, dim}, n_rows, dim, out);
}

} // namespace arbor::avx512

#else

// Built without these flags (a non-x86 target): never chosen, AVX2's (or the reference).
namespace arbor::avx512 {
bool available() { return false; }
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    avx2::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
}
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    avx2::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
}
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    avx2::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
}
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    avx2::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
}
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    avx2::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
}
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    avx2::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
}
} // namespace arbor::avx512

#endif
