// What the float (matvec.cu) and integer (matvec_q8.cu) decode products share: the
// stacked matrices of one launch, and how a warp finds and stores its row.
#pragma once

#include "arbor/kernels/dtype.h"
#include "warp_reduce.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace arbor::cuda {

constexpr int kMatvecWarps = 4;  // weight rows per block of the decode products

// Up to three matrices of one type and width as one launch (a layer's Q, K and V): warp
// r takes row r of the stacked rows. Gated: two matrices of equal rows (gate and up),
// and the output is silu(gate . x) * (up . x) in segment 0.
struct Segments {
    const uint8_t* weight[3];
    float* y[3];
    const float* bias[3];
    int64_t end[3];  // stacked rows before the end of each segment
    int n;
};

// seg's array a at segment i, chosen without indexing: a kernel parameter indexed by a
// run-time value is copied to local memory by every thread.
template <class T>
__device__ __forceinline__ T pick(const T (&a)[3], int i) {
    return i == 0 ? a[0] : (i == 1 ? a[1] : a[2]);
}

// The warp's stacked row r: its segment's weights, output and bias, its row within the
// segment, and the segment's rows.
struct StackedRow {
    const uint8_t* weight;
    float* y;
    const float* bias;
    int64_t local, rows;
};
__device__ __forceinline__ StackedRow stacked_row(const Segments& seg, int64_t r) {
    const int i = r < seg.end[0] ? 0 : (r < seg.end[1] ? 1 : 2);
    const int64_t begin = i == 0 ? 0 : (i == 1 ? seg.end[0] : seg.end[1]);
    return {pick(seg.weight, i), pick(seg.y, i), pick(seg.bias, i), r - begin, pick(seg.end, i) - begin};
}

// Row `row`'s output for activation row t from its sums s (and u, the up row's, when
// gated): y[t * rows + local].
template <bool GATED>
__device__ __forceinline__ void store_output(const StackedRow& row, int t, float s, float u) {
    if (GATED) s = s / (1.0f + expf(-s)) * u;  // silu_mul's expression
    row.y[t * row.rows + row.local] = row.bias ? s + row.bias[row.local] : s;
}

// The warp's results acc (and up, when gated) for its row, summed over the lanes and
// written by lane 0: y[t * rows + local] for each activation row t.
template <int NX, bool GATED>
__device__ __forceinline__ void store_row(const StackedRow& row, const float (&acc)[NX], const float (&up)[NX],
                                          int n_x) {
#pragma unroll
    for (int t = 0; t < NX; ++t) {
        if (t >= n_x) break;
        const float s = warp_sum(acc[t]), u = GATED ? warp_sum(up[t]) : 0.0f;
        if (threadIdx.x % 32 == 0) store_output<GATED>(row, t, s, u);
    }
}

// The integer path (matvec_q8.cu) on n_x activation rows quantized by quantize_q8.
// False, launching nothing, when type has no integer dot.
bool launch_matvec_q8(DType type, const Segments& seg, bool gated, size_t row_bytes, int64_t cols, const void* q8,
                      int n_x, cudaStream_t stream);

} // namespace arbor::cuda
