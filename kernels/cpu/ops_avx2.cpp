// AVX2/FMA variants; this file alone is compiled with -mavx2 -mfma.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/quant.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "quant/avx2_common.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace arbor::avx2 {

using quant::avx2::hsum;

// Same rule as the quantized kernels (AVX2, FMA and F16C; ARBOR_CPU_ISA=scalar turns it off).
bool available() {
    static const bool ok = isa_supported(Isa::Avx2);
    return ok;
}

namespace {

// Eight elements of a key or value as floats: F32 as they are, F16 converted exactly
// (every half is a float), so both kinds go through the same arithmetic.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// What the tiles read: eight keys (columns j..j+7 of element d) or eight elements of a
// value row (j's elements col..col+7, col a multiple of eight), as floats.
template <class E>
struct Columns {
    const E* keys;
    int64_t ld;
    __m256 at(int64_t d, int64_t j) const { return load8(keys + d * ld + j); }
};
// Q8_0: the scales' row of d's block times the int8 row, exact (cpu_ops.h).
struct Q8Columns {
    const int8_t* keys;
    const uint16_t* scales;
    int64_t ld;
    __m256 at(int64_t d, int64_t j) const {
        return _mm256_mul_ps(load8(scales + d / kQ8BlockSize * ld + j), load8(keys + d * ld + j));
    }
};
template <class E>
struct Rows {
    const E* rows;
    int64_t dim;
    __m256 at(int64_t j, int64_t col) const { return load8(rows + j * dim + col); }
};
struct Q8Rows {
    const int8_t* rows;
    const uint16_t* scales;
    int64_t dim;
    __m256 at(int64_t j, int64_t col) const {
        const float scale = _cvtsh_ss(scales[j * (dim / kQ8BlockSize) + col / kQ8BlockSize]);
        return _mm256_mul_ps(_mm256_set1_ps(scale), load8(rows + j * dim + col));
    }
};

// NQ heads x NG groups of eight key columns from column g (a multiple of eight): one
// accumulator per (head, group), a fused multiply-add per d in order, so every lane is
// the contract's chain for its score whatever the tile. Writes the columns in [lo, hi)
// to out (column lo at out[0]).
template <int NQ, int NG, class K>
void column_tile(const float* q, const K& keys, int64_t g, int64_t lo, int64_t hi, int64_t dim,
                 float* out, int64_t ldo) {
    __m256 acc[NQ][NG];
    for (auto& row : acc)
        for (auto& a : row) a = _mm256_setzero_ps();
    for (int64_t d = 0; d < dim; ++d) {
        __m256 k[NG];
        for (int c = 0; c < NG; ++c) k[c] = keys.at(d, g + 8 * c);
        for (int h = 0; h < NQ; ++h) {
            const __m256 qd = _mm256_broadcast_ss(q + h * dim + d);
            for (int c = 0; c < NG; ++c) acc[h][c] = _mm256_fmadd_ps(qd, k[c], acc[h][c]);
        }
    }
    // Through memory: with the stores below reading acc, GCC kept acc in memory in the
    // loop above as well (six stores per d).
    alignas(32) float lanes[NQ][NG][8];
    for (int h = 0; h < NQ; ++h)
        for (int c = 0; c < NG; ++c) _mm256_store_ps(lanes[h][c], acc[h][c]);
    for (int c = 0; c < NG; ++c) {
        const int64_t from = g + 8 * c;
        if (from >= lo && from + 8 <= hi) {
            for (int h = 0; h < NQ; ++h) _mm256_storeu_ps(out + h * ldo + (from - lo), _mm256_load_ps(lanes[h][c]));
            continue;
        }
        // A group at either end of the range: only its columns inside it.
        const int64_t a = std::max(from, lo), b = std::min(from + 8, hi);
        for (int h = 0; h < NQ; ++h)
            for (int64_t j = a; j < b; ++j) out[h * ldo + (j - lo)] = lanes[h][c][j - from];
    }
}

// The groups of eight columns that hold [first, first + n), two at a time (up to twelve
// accumulators, their keys and the broadcast query element fit the 16 registers), the
// last one alone.
template <int NQ, class K>
void column_groups(const float* q, const K& keys, int64_t first, int64_t n, int64_t dim, float* out,
                   int64_t ldo) {
    const int64_t end = first + n;
    int64_t g = first / 8 * 8;
    for (; g + 8 < end; g += 16) column_tile<NQ, 2>(q, keys, g, first, end, dim, out, ldo);
    if (g < end) column_tile<NQ, 1>(q, keys, g, first, end, dim, out, ldo);
}

// NQ heads x NC chunks of 8 output columns, keys in order: each key's row is loaded once
// for the NQ heads.
template <int NQ, int NC, class R>
void value_tile(const float* weights, int64_t ldw, const R& rows, int64_t col, int64_t n_rows, int64_t dim,
                float* out) {
    __m256 acc[NQ][NC];
    for (int h = 0; h < NQ; ++h)
        for (int c = 0; c < NC; ++c) acc[h][c] = _mm256_loadu_ps(out + h * dim + 8 * c);
    // The weights first, then one chunk at a time: NQ x NC accumulators, NQ weights and a
    // chunk fit the 16 registers (all NC chunks first spilled converted F16 chunks).
    for (int64_t j = 0; j < n_rows; ++j) {
        __m256 w[NQ];
        for (int h = 0; h < NQ; ++h) w[h] = _mm256_broadcast_ss(weights + h * ldw + j);
        for (int c = 0; c < NC; ++c) {
            const __m256 v = rows.at(j, col + 8 * c);
            for (int h = 0; h < NQ; ++h) acc[h][c] = _mm256_fmadd_ps(w[h], v, acc[h][c]);
        }
    }
    for (int h = 0; h < NQ; ++h)
        for (int c = 0; c < NC; ++c) _mm256_storeu_ps(out + h * dim + 8 * c, acc[h][c]);
}

// Chunks of 8 columns NC at a time: for up to three heads four (twelve accumulators, three
// weights and a chunk fit the 16 registers), for four heads two (eight, four and one).
template <int NQ, class R>
void value_rows(const float* weights, int64_t ldw, const R& rows, int64_t n_rows, int64_t dim, float* out) {
    constexpr int NC = NQ >= 4 ? 2 : 4;
    int64_t c = 0;
    for (; c + 8 * NC <= dim; c += 8 * NC) value_tile<NQ, NC>(weights, ldw, rows, c, n_rows, dim, out + c);
    switch ((dim - c) / 8) {
    case 3:
        if constexpr (NC > 3) value_tile<NQ, 3>(weights, ldw, rows, c, n_rows, dim, out + c);
        break;
    case 2:
        if constexpr (NC > 2) value_tile<NQ, 2>(weights, ldw, rows, c, n_rows, dim, out + c);
        break;
    case 1: value_tile<NQ, 1>(weights, ldw, rows, c, n_rows, dim, out + c); break;
    default: break;
    }
}

// Query heads three at a time (a value tile's twelve accumulators, three weights and a
// chunk fit the 16 registers; a column tile's six, two key groups and a query element),
// then the last one or two; four heads (grouped-query attention's usual group, as in
// Llama 3.2 1B) in one tile of each, where three and one left the one head's chains
// waiting on the FMA latency and read every key and value twice.
template <class Four, class Three, class Two, class One>
void by_heads(int64_t n_q, Four&& four, Three&& three, Two&& two, One&& one) {
    if (n_q == 4) return four(0);
    int64_t h = 0;
    for (; h + 3 <= n_q; h += 3) three(h);
    if (n_q - h == 2) two(h);
    else if (n_q - h == 1) one(h);
}

// Every query head against every key column: six heads at a time (twelve accumulators
// over two groups keep both FMA pipes busy, where three heads' six chains wait on the FMA
// latency), then the rest by_heads.
template <class K>
void column_heads(const float* q, int64_t n_q, const K& keys, int64_t first, int64_t n, int64_t dim,
                  float* out, int64_t ldo) {
    int64_t six = 0;
    for (; six + 6 <= n_q; six += 6) column_groups<6>(q + six * dim, keys, first, n, dim, out + six * ldo, ldo);
    q += six * dim;
    out += six * ldo;
    by_heads(
        n_q - six, [&](int64_t h) { column_groups<4>(q + h * dim, keys, first, n, dim, out + h * ldo, ldo); },
        [&](int64_t h) { column_groups<3>(q + h * dim, keys, first, n, dim, out + h * ldo, ldo); },
        [&](int64_t h) { column_groups<2>(q + h * dim, keys, first, n, dim, out + h * ldo, ldo); },
        [&](int64_t h) { column_groups<1>(q + h * dim, keys, first, n, dim, out + h * ldo, ldo); });
}

template <class R>
void value_heads(const float* weights, int64_t ldw, int64_t n_q, const R& rows, int64_t n_rows, int64_t dim,
                 float* out) {
    by_heads(
        n_q, [&](int64_t h) { value_rows<4>(weights + h * ldw, ldw, rows, n_rows, dim, out + h * dim); },
        [&](int64_t h) { value_rows<3>(weights + h * ldw, ldw, rows, n_rows, dim, out + h * dim); },
        [&](int64_t h) { value_rows<2>(weights + h * ldw, ldw, rows, n_rows, dim, out + h * dim); },
        [&](int64_t h) { value_rows<1>(weights + h * ldw, ldw, rows, n_rows, dim, out + h * dim); });
}

} // namespace

void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (ld % 8 != 0 || first + n > ld) ref::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
    else column_heads(q, n_q, Columns<float>{keys, ld}, first, n, dim, out, ldo);
}

void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    if (ld % 8 != 0 || first + n > ld) ref::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
    else column_heads(q, n_q, Columns<uint16_t>{keys, ld}, first, n, dim, out, ldo);
}

void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    if (ld % 8 != 0 || first + n > ld || dim % kQ8BlockSize != 0)
        ref::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
    else column_heads(q, n_q, Q8Columns{keys, scales, ld}, first, n, dim, out, ldo);
}

void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (dim % 8 != 0) ref::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
    else value_heads(weights, ldw, n_q, Rows<float>{rows, dim}, n_rows, dim, out);
}

void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    if (dim % 8 != 0) ref::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
    else value_heads(weights, ldw, n_q, Rows<uint16_t>{rows, dim}, n_rows, dim, out);
}

void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    if (dim % kQ8BlockSize != 0) ref::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
    else value_heads(weights, ldw, n_q, Q8Rows{rows, scales, dim}, n_rows, dim, out);
}

void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y) {
    if (dim % kQ8BlockSize != 0) return ref::f32_from_q8_0(rows, scales, n_rows, dim, y);
    const Q8Rows q8{rows, scales, dim};
    for (int64_t j = 0; j < n_rows; ++j)
        for (int64_t col = 0; col < dim; col += 8) _mm256_storeu_ps(y + j * dim + col, q8.at(j, col));
}

void f16_from_f32(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    ref::f16_from_f32(x + i, y + i, n - i);
}

void f32_from_f16(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load8(x + i));
    ref::f32_from_f16(x + i, y + i, n - i);
}

void axpy_f32(float a, const float* x, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}

void scale_f32(float a, float* y, int64_t n) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] *= a;
}


namespace {

// exp on 8 lanes: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by its degree-6 minimax
// polynomial (Cephes' expf coefficients), times 2^n built in the exponent bits. Inputs
// are clamped to the range where the result is a normal float.
inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
}

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

} // namespace

SoftmaxStats softmax(float* x, int64_t n) {
    if (n <= 0) return {-INFINITY, 0.0f};
    int64_t i = 0;
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
    float max = hmax(vmax);
    for (; i < n; ++i) max = std::max(max, x[i]);
    const __m256 m = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
        _mm256_storeu_ps(x + i, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    float sum = hsum(vsum);
    for (; i < n; ++i) sum += x[i] = std::exp(x[i] - max);
    scale_f32(1.0f / sum, x, n);
    return {max, sum};
}

// x / (1 + exp(-x)) * g; exp_ps clamps -x, so very negative x gives a tiny value of
// the right sign instead of 0 or NaN.
void silu_mul(float* x, const float* g, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 silu = _mm256_div_ps(v, _mm256_add_ps(one, exp_ps(_mm256_xor_ps(v, sign))));
        _mm256_storeu_ps(x + i, _mm256_mul_ps(silu, _mm256_loadu_ps(g + i)));
    }
    ref::silu_mul(x + i, g + i, n - i);
}

// Four double accumulators hide the add latency that bounds the reference's one chain
// (a 576-element row took about 0.5 us; eight rows are normed twice a layer).
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) {
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 4; ++k) {
            const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * k));
            acc[k] = _mm256_fmadd_pd(v, v, acc[k]);
        }
    const __m256d four = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, four);
    double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; ++i) sum += double(x[i]) * double(x[i]);
    const float s = float(1.0 / std::sqrt(sum / double(n) + double(eps)));
    const __m256 scale = _mm256_set1_ps(s);
    i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), scale), _mm256_loadu_ps(weight + i)));
    for (; i < n; ++i) y[i] = x[i] * s * weight[i];
}

} // namespace arbor::avx2

#else  // not an x86 build: the dispatcher never selects these

namespace arbor::avx2 {
bool available() { return false; }
void f16_from_f32(const float* x, uint16_t* y, int64_t n) { ref::f16_from_f32(x, y, n); }
void f32_from_f16(const uint16_t* x, float* y, int64_t n) { ref::f32_from_f16(x, y, n); }
void axpy_f32(float a, const float* x, float* y, int64_t n) { ref::axpy_f32(a, x, y, n); }
void scale_f32(float a, float* y, int64_t n) { ref::scale_f32(a, y, n); }
SoftmaxStats softmax(float* x, int64_t n) { return ref::softmax(x, n); }
void silu_mul(float* x, const float* g, int64_t n) { ref::silu_mul(x, g, n); }
void rms_norm(const float* x, const float* weight, float* y, int64_t n, float eps) { ref::rms_norm(x, weight, y, n, eps); }
void dot_columns_f32(const float* q, int64_t n_q, const float* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    ref::dot_columns_f32(q, n_q, keys, ld, first, n, dim, out, ldo);
}
void dot_columns_f16(const float* q, int64_t n_q, const uint16_t* keys, int64_t ld, int64_t first, int64_t n,
                     int64_t dim, float* out, int64_t ldo) {
    ref::dot_columns_f16(q, n_q, keys, ld, first, n, dim, out, ldo);
}
void accumulate_rows_f32(const float* weights, int64_t ldw, int64_t n_q, const float* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    ref::accumulate_rows_f32(weights, ldw, n_q, rows, n_rows, dim, out);
}
void accumulate_rows_f16(const float* weights, int64_t ldw, int64_t n_q, const uint16_t* rows, int64_t n_rows,
                         int64_t dim, float* out) {
    ref::accumulate_rows_f16(weights, ldw, n_q, rows, n_rows, dim, out);
}
void dot_columns_q8_0(const float* q, int64_t n_q, const int8_t* keys, const uint16_t* scales, int64_t ld,
                      int64_t first, int64_t n, int64_t dim, float* out, int64_t ldo) {
    ref::dot_columns_q8_0(q, n_q, keys, scales, ld, first, n, dim, out, ldo);
}
void accumulate_rows_q8_0(const float* weights, int64_t ldw, int64_t n_q, const int8_t* rows,
                          const uint16_t* scales, int64_t n_rows, int64_t dim, float* out) {
    ref::accumulate_rows_q8_0(weights, ldw, n_q, rows, scales, n_rows, dim, out);
}
void f32_from_q8_0(const int8_t* rows, const uint16_t* scales, int64_t n_rows, int64_t dim, float* y) {
    ref::f32_from_q8_0(rows, scales, n_rows, dim, y);
}
} // namespace arbor::avx2

#endif
