// The integer path of the decode products: activation rows quantized once per product
// to int8 blocks (quantize_q8), then each weight unit's codes meet them in dp4a dot
// products (q8_dot.h). One warp per weight row, lane l taking units l, l + 32, ...: a
// warp reads a run of consecutive blocks at a time, each unit is loaded once for all
// activation rows, and a lane's sum is taken in an order set by the row's length alone,
// so a row's result never depends on the rows in its batch.
#include "arbor/kernels/cuda_kernels.h"
#include "dependent_launch.cuh"
#include "matvec_launch.cuh"
#include "q8_dot.h"
#include "q8_store.cuh"

#include <cstdlib>

namespace arbor::cuda {
namespace {

// One warp per block of 32 elements: lane i quantizes element i.
__global__ void quantize_q8_kernel(const float* x, int64_t cols, int64_t blocks, uint8_t* out) {
    let_next_kernel_start();
    wait_for_previous_kernel();
    const int64_t g = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    if (g >= blocks) return;
    const int lane = threadIdx.x % 32;
    const int64_t per_row = cols / q8::kBlock, t = g / per_row, b = g % per_row;
    const int64_t i = b * q8::kBlock + lane;
    store_q8(x[t * cols + i], i, cols, out + size_t(t) * q8::row_bytes(cols));
}

// SPLIT warps per weight row (1 or 2): warp k of a row takes units 32 (SPLIT j + k) + lane.
// A split row's warps add their sums in shared memory in warp order.
template <DType T, int NX, bool GATED, int SPLIT>
__global__ void __launch_bounds__(kMatvecWarps * 32)
    matvec_q8_kernel(Segments seg, size_t row_bytes, int units, const uint8_t* act, int n_x) {
    static_assert(kMatvecWarps % SPLIT == 0);
    let_next_kernel_start();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, share = warp % SPLIT;
    const int64_t r = int64_t(blockIdx.x) * (kMatvecWarps / SPLIT) + warp / SPLIT;
    const int64_t total = pick(seg.end, seg.n - 1);
    // A split row's warps meet at a barrier, so past the end they stay (on a valid row).
    if (SPLIT == 1 && r >= total) return;
    const bool live = r < total;
    const StackedRow row = stacked_row(seg, live ? r : total - 1);
    const uint8_t* w = row.weight + size_t(row.local) * row_bytes;
    const uint8_t* w_up = GATED ? seg.weight[1] + size_t(row.local) * row_bytes : nullptr;
    wait_for_previous_kernel();
    const int64_t cols = int64_t(units) * q8::kBlock;
    const size_t act_bytes = q8::row_bytes(cols);
    float acc[NX], up[NX];
#pragma unroll
    for (int t = 0; t < NX; ++t) acc[t] = 0.0f, up[t] = 0.0f;
#pragma unroll 2
    for (int u = 32 * share + lane; u < units; u += 32 * SPLIT) {
        const q8::WeightUnit wu = q8::Dot<T>::load(w, u);
        q8::WeightUnit uu{};
        if (GATED) uu = q8::Dot<T>::load(w_up, u);
#pragma unroll
        for (int t = 0; t < NX; ++t) {
            if (t >= n_x) break;
            const q8::Act a = q8::act_block(act + t * act_bytes, cols, u);
            acc[t] += q8::Dot<T>::dot(wu, a);
            if (GATED) up[t] += q8::Dot<T>::dot(uu, a);
        }
    }
    if constexpr (SPLIT == 1) {
        store_row<NX, GATED>(row, acc, up, n_x);
    } else {
        __shared__ float sums[kMatvecWarps][GATED ? 2 : 1][NX];
#pragma unroll
        for (int t = 0; t < NX; ++t) {
            const float s = warp_sum(acc[t]), u = GATED ? warp_sum(up[t]) : 0.0f;
            if (lane == 0) {
                sums[warp][0][t] = s;
                if (GATED) sums[warp][GATED ? 1 : 0][t] = u;
            }
        }
        __syncthreads();
        if (!live || share != 0 || lane >= NX || lane >= n_x) return;
        const int t = lane;
        float s = 0.0f, u = 0.0f;
#pragma unroll
        for (int k = 0; k < SPLIT; ++k) {
            s += sums[warp + k][0][t];
            if (GATED) u += sums[warp + k][GATED ? 1 : 0][t];
        }
        store_output<GATED>(row, t, s, u);
    }
}

unsigned blocks_for(int64_t n, int per_block) { return unsigned((n + per_block - 1) / per_block); }

int g_split_units = [] {
    const char* v = std::getenv("ARBOR_CUDA_Q8_SPLIT_UNITS");
    return v && std::atoi(v) > 0 ? std::atoi(v) : 64;
}();

template <DType T, bool GATED, int SPLIT>
void launch(const Segments& seg, size_t rb, int units, const uint8_t* act, int n_x, cudaStream_t s) {
    const unsigned grid = blocks_for(seg.end[seg.n - 1], kMatvecWarps / SPLIT), threads = kMatvecWarps * 32;
    const auto go = [&](auto kernel) { launch_kernel(kernel, grid, threads, 0, s, seg, rb, units, act, n_x); };
    if (n_x == 1) go(matvec_q8_kernel<T, 1, GATED, SPLIT>);
    else if (n_x == 2) go(matvec_q8_kernel<T, 2, GATED, SPLIT>);
    else if (n_x <= 4) go(matvec_q8_kernel<T, 4, GATED, SPLIT>);
    else go(matvec_q8_kernel<T, 8, GATED, SPLIT>);
}

template <DType T, bool GATED>
void launch(const Segments& seg, size_t rb, int units, const uint8_t* act, int n_x, cudaStream_t s) {
    if (units >= g_split_units) launch<T, GATED, 2>(seg, rb, units, act, n_x, s);
    else launch<T, GATED, 1>(seg, rb, units, act, n_x, s);
}

template <DType T>
void launch(const Segments& seg, bool gated, size_t rb, int units, const uint8_t* act, int n_x, cudaStream_t s) {
    if (gated) launch<T, true>(seg, rb, units, act, n_x, s);
    else launch<T, false>(seg, rb, units, act, n_x, s);
}

} // namespace

bool has_int8_path(DType type) { return q8::has_dot(type); }

void set_q8_split_units(int units) { g_split_units = units > 0 ? units : 1; }
int q8_split_units() { return g_split_units; }

size_t q8_bytes(int64_t cols, int n_x) { return size_t(n_x) * q8::row_bytes(cols); }

void quantize_q8(const float* x, int64_t cols, int n_x, void* q8_rows, void* stream) {
    const int64_t blocks = int64_t(n_x) * (cols / q8::kBlock);
    if (blocks <= 0) return;
    launch_kernel(quantize_q8_kernel, blocks_for(blocks * 32, 256), 256, 0, static_cast<cudaStream_t>(stream), x, cols,
                  blocks, static_cast<uint8_t*>(q8_rows));
}

bool launch_matvec_q8(DType type, const Segments& seg, bool gated, size_t rb, int64_t cols, const void* q8_rows,
                      int n_x, cudaStream_t s) {
    const auto* act = static_cast<const uint8_t*>(q8_rows);
    const int units = int(cols / q8::kBlock);
    switch (type) {
    case DType::Q4_0: launch<DType::Q4_0>(seg, gated, rb, units, act, n_x, s); return true;
    case DType::Q4_1: launch<DType::Q4_1>(seg, gated, rb, units, act, n_x, s); return true;
    case DType::Q8_0: launch<DType::Q8_0>(seg, gated, rb, units, act, n_x, s); return true;
    case DType::Q4_K: launch<DType::Q4_K>(seg, gated, rb, units, act, n_x, s); return true;
    case DType::Q5_K: launch<DType::Q5_K>(seg, gated, rb, units, act, n_x, s); return true;
    case DType::Q6_K: launch<DType::Q6_K>(seg, gated, rb, units, act, n_x, s); return true;
    default: return false;
    }
}

} // namespace arbor::cuda
