// AVX2/FMA block products with float activations; compiled with -mavx2 -mfma -mf16c.
// The operation order is the contract documented in float_dot.h. Each block is unpacked
// once in registers and applied to up to four activation rows.
#include "arbor/kernels/float_dot.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "arbor/kernels/quant_blocks.h"

#include "quant/avx2_common.h"

#include <immintrin.h>

#include <cstring>

namespace arbor::avx2 {

using quant::avx2::hsum;
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256 widen_u8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Codes of block b as four vectors of 8 floats (elements 0-7, 8-15, 16-23, 24-31) and its scale.
template <DType T>
inline float unpack(const void* row, int64_t b, __m256 (&c)[4]) {
    if constexpr (T == DType::Q8_0) {
        const auto& blk = static_cast<const BlockQ8_0*>(row)[b];
        for (int k = 0; k < 4; ++k)
            c[k] = _mm256_cvtepi32_ps(
                _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + 8 * k))));
        return half(blk.d);
    } else {
        using Block = std::conditional_t<T == DType::Q4_0, BlockQ4_0, BlockQ4_1>;
        const auto& blk = static_cast<const Block*>(row)[b];
        // Bytes widened to 32 bits: the low nibble is element i, byte >> 4 element i + 16.
        const __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs)));
        const __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + 8)));
        const __m256i low4 = _mm256_set1_epi32(0x0f);
        __m256i q[4] = {_mm256_and_si256(v0, low4), _mm256_and_si256(v1, low4), _mm256_srli_epi32(v0, 4),
                        _mm256_srli_epi32(v1, 4)};
        for (int k = 0; k < 4; ++k) {
            if constexpr (T == DType::Q4_0) q[k] = _mm256_sub_epi32(q[k], _mm256_set1_epi32(8));
            c[k] = _mm256_cvtepi32_ps(q[k]);
        }
        return half(blk.d);
    }
}

inline __m256 block_t(const __m256 (&c)[4], const float* x) {
    __m256 t = _mm256_mul_ps(c[0], _mm256_loadu_ps(x));
    t = _mm256_fmadd_ps(c[1], _mm256_loadu_ps(x + 8), t);
    t = _mm256_fmadd_ps(c[2], _mm256_loadu_ps(x + 16), t);
    return _mm256_fmadd_ps(c[3], _mm256_loadu_ps(x + 24), t);
}

// Even and odd blocks accumulate separately (two independent chains), combined at the
// end. The Q4_1 minimum terms form their own chain in block order: inline for one row
// (one half-to-float conversion gives both d and m), in a second pass for several rows
// (registers are short); the results are the same.
template <DType T, int NX>
void rows_x(int64_t n, const void* w, const float* x, int64_t ldx, const float* xs, float* out, int64_t out_stride) {
    constexpr bool kInlineMins = T == DType::Q4_1 && NX == 1;
    const int64_t nb = n / 32;
    __m256 acc0[NX], acc1[NX];
    for (int j = 0; j < NX; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
    __m128 mins = _mm_setzero_ps();
    auto step = [&](int64_t b, __m256 (&acc)[NX]) {
        __m256 c[4];
        __m256 d;
        if constexpr (kInlineMins) {
            const auto& blk = static_cast<const BlockQ4_1*>(w)[b];
            unpack<T>(w, b, c);
            int32_t dm_bits;
            std::memcpy(&dm_bits, &blk.d, sizeof dm_bits);  // d and m are adjacent halves
            const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128(dm_bits));
            d = _mm256_broadcastss_ps(dm);
            mins = _mm_fmadd_ss(_mm_movehdup_ps(dm), _mm_load_ss(xs + b), mins);
        } else {
            d = _mm256_set1_ps(unpack<T>(w, b, c));
        }
        for (int j = 0; j < NX; ++j) acc[j] = _mm256_fmadd_ps(d, block_t(c, x + j * ldx + b * 32), acc[j]);
    };
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        step(b, acc0);
        step(b + 1, acc1);
    }
    if (b < nb) step(b, acc0);
    for (int j = 0; j < NX; ++j) {
        float result = hsum(_mm256_add_ps(acc0[j], acc1[j]));
        if constexpr (kInlineMins) {
            result += _mm_cvtss_f32(mins);
        } else if constexpr (T == DType::Q4_1) {
            const auto* blocks = static_cast<const BlockQ4_1*>(w);
            __m128 m = _mm_setzero_ps();
            for (int64_t k = 0; k < nb; ++k)
                m = _mm_fmadd_ss(_mm_set_ss(half(blocks[k].m)), _mm_load_ss(xs + j * nb + k), m);
            result += _mm_cvtss_f32(m);
        }
        out[j * out_stride] = result;
    }
}

template <DType T>
void multi(int64_t n, const void* w, const float* x, int64_t ldx, const float* xs, int n_x, float* out,
           int64_t out_stride) {
    const int64_t nb = n / 32;
    int j = 0;
    for (; j + 4 <= n_x; j += 4) rows_x<T, 4>(n, w, x + j * ldx, ldx, xs + j * nb, out + j * out_stride, out_stride);
    switch (n_x - j) {
    case 3: rows_x<T, 3>(n, w, x + j * ldx, ldx, xs + j * nb, out + j * out_stride, out_stride); break;
    case 2: rows_x<T, 2>(n, w, x + j * ldx, ldx, xs + j * nb, out + j * out_stride, out_stride); break;
    case 1: rows_x<T, 1>(n, w, x + j * ldx, ldx, xs + j * nb, out + j * out_stride, out_stride); break;
    default: break;
    }
}

template <DType T>
float single(int64_t n, const void* w, const float* x, const float* xs) {
    float out;
    rows_x<T, 1>(n, w, x, 0, xs, &out, 0);
    return out;
}

} // namespace

float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* s) { return single<DType::Q4_0>(n, w, x, s); }
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* s) { return single<DType::Q4_1>(n, w, x, s); }
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* s) { return single<DType::Q8_0>(n, w, x, s); }

namespace {

template <DType T>
void rows_of(int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx, const float* xs,
             int n_x, float* out, int64_t ldy) {
    const auto* row = static_cast<const uint8_t*>(w);
    for (int64_t r = 0; r < n_w; ++r) multi<T>(n, row + size_t(r) * row_stride, x, ldx, xs, n_x, out + r, ldy);
}

} // namespace

void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy) {
    switch (type) {
    case DType::Q4_0: rows_of<DType::Q4_0>(n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy); break;
    case DType::Q4_1: rows_of<DType::Q4_1>(n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy); break;
    case DType::Q8_0: rows_of<DType::Q8_0>(n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy); break;
    default: ref::dot_multi_rows(type, n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy); break;
    }
}

} // namespace arbor::avx2

#else

namespace arbor::avx2 {
float dot_q4_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_0_f32(n, w, x, s); }
float dot_q4_1_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q4_1_f32(n, w, x, s); }
float dot_q8_0_f32(int64_t n, const void* w, const float* x, const float* s) { return ref::dot_q8_0_f32(n, w, x, s); }
void dot_multi_rows(DType type, int64_t n, const void* w, size_t row_stride, int64_t n_w, const float* x, int64_t ldx,
                    const float* xs, int n_x, float* out, int64_t ldy) {
    ref::dot_multi_rows(type, n, w, row_stride, n_w, x, ldx, xs, n_x, out, ldy);
}
} // namespace arbor::avx2

#endif
