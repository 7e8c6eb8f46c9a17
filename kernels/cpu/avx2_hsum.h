// Horizontal sum of 8 floats for the AVX2 translation units: halves, then pairs, then the
// last two (the order float_dot.h documents). Internal linkage, so no AVX2 code can be
// picked by the linker for a portable translation unit.
#pragma once

#include <immintrin.h>

namespace arbor::avx2 {
namespace {

inline float hsum(__m256 v) {
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

} // namespace
} // namespace arbor::avx2
