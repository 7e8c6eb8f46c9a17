// AVX2/FMA block products with float activations; compiled with -mavx2 -mfma -mf16c.
// The operation order is the contract documented in float_dot.h.
#include "arbor/kernels/float_dot.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "arbor/kernels/quant_blocks.h"

#include <immintrin.h>

#include <cstring>

namespace arbor::avx2 {
namespace {

inline float hsum(__m256 v) {
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Codes of 32 elements as four vectors of 8 int8 in the low 64 bits of 128-bit lanes.
inline __m256 codes_dot(__m128i c0, __m128i c1, __m128i c2, __m128i c3, const float* x, bool is_signed) {
    auto cvt = [is_signed](__m128i c) {
        return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(c) : _mm256_cvtepu8_epi32(c));
    };
    __m256 t = _mm256_mul_ps(cvt(c0), _mm256_loadu_ps(x));
    t = _mm256_fmadd_ps(cvt(c1), _mm256_loadu_ps(x + 8), t);
    t = _mm256_fmadd_ps(cvt(c2), _mm256_loadu_ps(x + 16), t);
    return _mm256_fmadd_ps(cvt(c3), _mm256_loadu_ps(x + 24), t);
}

// The 16 packed bytes of a 4-bit block as the codes of elements 0..15 and 16..31.
inline void unpack_nibbles(const uint8_t* qs, __m128i& lo, __m128i& hi) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i mask = _mm_set1_epi8(0x0f);
    lo = _mm_and_si128(q, mask);
    hi = _mm_and_si128(_mm_srli_epi16(q, 4), mask);
}

} // namespace

float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ4_0*>(w);
    const __m128i eight = _mm_set1_epi8(8);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < n / QK4_0; ++b) {
        __m128i lo, hi;
        unpack_nibbles(blocks[b].qs, lo, hi);
        lo = _mm_sub_epi8(lo, eight);
        hi = _mm_sub_epi8(hi, eight);
        const __m256 t = codes_dot(lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8), x + b * QK4_0, true);
        acc[b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(half(blocks[b].d)), t, acc[b & 1]);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1]));
}

float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* x_block_sums) {
    const auto* blocks = static_cast<const BlockQ4_1*>(w);
    const __m256i low4 = _mm256_set1_epi32(0x0f);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 mins = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK4_1; ++b) {
        const BlockQ4_1& blk = blocks[b];
        // Bytes widened to 32 bits: the low nibble is element i, the high nibble (byte >> 4,
        // no mask needed) element i + 16.
        const __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs)));
        const __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + 8)));
        const float* xb = x + b * QK4_1;
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v0, low4)), _mm256_loadu_ps(xb));
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(v1, low4)), _mm256_loadu_ps(xb + 8), t);
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v0, 4)), _mm256_loadu_ps(xb + 16), t);
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(v1, 4)), _mm256_loadu_ps(xb + 24), t);
        // d and m are adjacent halves: one conversion gives both.
        int32_t dm_bits;
        std::memcpy(&dm_bits, &blk.d, sizeof dm_bits);
        const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(dm_bits));
        acc[b & 1] = _mm256_fmadd_ps(_mm256_broadcastss_ps(dm), t, acc[b & 1]);
        mins = _mm_fmadd_ss(_mm_movehdup_ps(dm), _mm_load_ss(x_block_sums + b), mins);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1])) + _mm_cvtss_f32(mins);
}

float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float*) {
    const auto* blocks = static_cast<const BlockQ8_0*>(w);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    auto codes = [](const int8_t* q) {
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
    };
    for (int64_t b = 0; b < n / QK8_0; ++b) {
        const int8_t* q = blocks[b].qs;
        const float* xb = x + b * QK8_0;
        __m256 t = _mm256_mul_ps(codes(q), _mm256_loadu_ps(xb));
        t = _mm256_fmadd_ps(codes(q + 8), _mm256_loadu_ps(xb + 8), t);
        t = _mm256_fmadd_ps(codes(q + 16), _mm256_loadu_ps(xb + 16), t);
        t = _mm256_fmadd_ps(codes(q + 24), _mm256_loadu_ps(xb + 24), t);
        acc[b & 1] = _mm256_fmadd_ps(_mm256_set1_ps(half(blocks[b].d)), t, acc[b & 1]);
    }
    return hsum(_mm256_add_ps(acc[0], acc[1]));
}

namespace {

// NW unpacked rows x NX activation rows; two blocks per iteration so that the two
// accumulators of each pair stay in registers.
template <int NW, int NX>
void block_micro(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, const float* x,
                 const float* xs, int64_t ldx, int64_t nb, float* y, int64_t ldy) {
    __m256 acc[NW][NX][2];
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) acc[r][j][0] = acc[r][j][1] = _mm256_setzero_ps();
    auto block = [&](int64_t b, int parity) {
        for (int r = 0; r < NW; ++r) {
            const float* c = codes + r * ldc + b * 32;
            const __m256 c0 = _mm256_loadu_ps(c), c1 = _mm256_loadu_ps(c + 8);
            const __m256 c2 = _mm256_loadu_ps(c + 16), c3 = _mm256_loadu_ps(c + 24);
            const __m256 dv = _mm256_set1_ps(d[r * ldb + b]);
            for (int j = 0; j < NX; ++j) {
                const float* xb = x + j * ldx + b * 32;
                __m256 t = _mm256_mul_ps(c0, _mm256_loadu_ps(xb));
                t = _mm256_fmadd_ps(c1, _mm256_loadu_ps(xb + 8), t);
                t = _mm256_fmadd_ps(c2, _mm256_loadu_ps(xb + 16), t);
                t = _mm256_fmadd_ps(c3, _mm256_loadu_ps(xb + 24), t);
                acc[r][j][parity] = _mm256_fmadd_ps(dv, t, acc[r][j][parity]);
            }
        }
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        block(b, 0);
        block(b + 1, 1);
    }
    if (b < nb) block(b, 0);
    for (int r = 0; r < NW; ++r)
        for (int j = 0; j < NX; ++j) {
            __m128 mins = _mm_setzero_ps();
            for (int64_t k = 0; k < nb; ++k)
                mins = _mm_fmadd_ss(_mm_load_ss(m + r * ldb + k), _mm_load_ss(xs + j * nb + k), mins);
            y[j * ldy + r] = hsum(_mm256_add_ps(acc[r][j][0], acc[r][j][1])) + _mm_cvtss_f32(mins);
        }
}

template <int NW>
void block_rows(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, const float* x,
                const float* xs, int64_t ldx, int64_t n_x, int64_t nb, float* y, int64_t ldy) {
    int64_t j = 0;
    for (; j + 2 <= n_x; j += 2)
        block_micro<NW, 2>(codes, d, m, ldc, ldb, x + j * ldx, xs + j * nb, ldx, nb, y + j * ldy, ldy);
    if (j < n_x) block_micro<NW, 1>(codes, d, m, ldc, ldb, x + j * ldx, xs + j * nb, ldx, nb, y + j * ldy, ldy);
}

} // namespace

void gemm_blocks(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, int64_t n_w,
                 const float* x, const float* xs, int64_t ldx, int64_t n_x, int64_t n, float* y, int64_t ldy) {
    const int64_t nb = n / 32;
    int64_t r = 0;
    for (; r + 2 <= n_w; r += 2)
        block_rows<2>(codes + r * ldc, d + r * ldb, m + r * ldb, ldc, ldb, x, xs, ldx, n_x, nb, y + r, ldy);
    if (r < n_w) block_rows<1>(codes + r * ldc, d + r * ldb, m + r * ldb, ldc, ldb, x, xs, ldx, n_x, nb, y + r, ldy);
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_0_f32(n, w, x, s); }
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_1_f32(n, w, x, s); }
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q8_0_f32(n, w, x, s); }
void gemm_blocks(const float* codes, const float* d, const float* m, int64_t ldc, int64_t ldb, int64_t n_w,
                 const float* x, const float* xs, int64_t ldx, int64_t n_x, int64_t n, float* y, int64_t ldy) {
    ref::gemm_blocks(codes, d, m, ldc, ldb, n_w, x, xs, ldx, n_x, n, y, ldy);
}
} // namespace arbor::avx2

#endif
