// Row-wise steps of the forward pass on the device: norms, residual adds, the gated
// activation, half conversion, biases, and RoPE with the store of K/V into their pages.
#include "arbor/kernels/cuda_kernels.h"
#include "dependent_launch.cuh"
#include "q8_store.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace arbor::cuda {
namespace {

constexpr int kNormThreads = 256;

// Sum of v over the block (Threads threads), returned to every thread.
template <int Threads>
__device__ float block_sum(float v) {
    __shared__ float partial[Threads / 32];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < Threads / 32; ++i) s += partial[i];
    __syncthreads();  // partial may be reused by the caller's next reduction
    return s;
}

// y row t = xr * scale * w, and its quantized row when q8 is given (n a multiple of 32,
// so that each warp's lanes hold one block and take the loop's turns together).
__device__ __forceinline__ void store_norm(const float* xr, float scale, const float* w, float* y, uint8_t* q8,
                                           int64_t n) {
    const int64_t t = blockIdx.x;
    float* yr = y + t * n;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
        const float v = xr[i] * scale * w[i];
        yr[i] = v;
        if (q8) store_q8(v, i, n, q8 + size_t(t) * q8::row_bytes(n));
    }
}

template <bool EARLY>
__global__ void rms_norm_kernel(const float* x, const int32_t* src, const float* w, float* y, int64_t n, float eps,
                                uint8_t* q8) {
    start_after_previous_kernel<EARLY>();
    const int64_t t = blockIdx.x;
    const float* xr = x + (src ? src[t] : t) * n;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) s += xr[i] * xr[i];
    store_norm(xr, rsqrtf(block_sum<kNormThreads>(s) / float(n) + eps), w, y, q8, n);
}

template <bool EARLY>
__global__ void add_rms_norm_kernel(float* x, const float* add, const float* w, float* y, int64_t n, float eps,
                                    uint8_t* q8) {
    start_after_previous_kernel<EARLY>();
    const int64_t t = blockIdx.x;
    float* xr = x + t * n;
    const float* ar = add + t * n;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) {
        const float v = xr[i] + ar[i];
        xr[i] = v;
        s += v * v;
    }
    if (!w) return;
    store_norm(xr, rsqrtf(block_sum<kNormThreads>(s) / float(n) + eps), w, y, q8, n);
}

// The norms for rows of a multiple of 32 (every model's width): a block of kWideThreads,
// thread k holding elements 4k .. 4k + 3 of each chunk of 4 * kWideThreads, read and
// written as float4. A decode step normalises one row, so the block is the whole kernel:
// its passes over the row are as short as the row allows. A 32-element block of the
// quantized output is eight neighbouring lanes of one warp; every lane takes every turn
// of the loops (the shuffles need the whole warp), lanes past the row's end with zeros.
constexpr int kWideThreads = 1024;

// max and sum over the eight lanes of a 32-element block (lanes 8m .. 8m + 7).
__device__ __forceinline__ float eight_lane_max(float v) {
#pragma unroll
    for (int offset = 1; offset < 8; offset <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}
__device__ __forceinline__ int eight_lane_sum(int v) {
#pragma unroll
    for (int offset = 1; offset < 8; offset <<= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Elements i .. i + 3 (v) of a row of cols, quantized as store_q8 would (the same scale:
// a maximum does not depend on the order it is taken in; the same codes and code sum).
__device__ __forceinline__ void store_q8_four(const float (&v)[4], bool active, int64_t i, int64_t cols,
                                              uint8_t* row) {
    float amax = 0.0f;
#pragma unroll
    for (int e = 0; e < 4; ++e) amax = fmaxf(amax, fabsf(v[e]));
    const float d = q8::scale_for(eight_lane_max(active ? amax : 0.0f));
    int8_t c[4];
    int sum = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) sum += c[e] = q8::code(v[e], d);
    sum = eight_lane_sum(active ? sum : 0);
    if (!active) return;
    *reinterpret_cast<char4*>(row + i) = make_char4(c[0], c[1], c[2], c[3]);
    if (i % q8::kBlock == 0) reinterpret_cast<q8::Scale*>(row + cols)[i / q8::kBlock] = {d, sum};
}

// y row t = xr * scale * w (and its quantized row), for the wide kernels.
__device__ __forceinline__ void store_norm_wide(const float* xr, float scale, const float* w, float* y, uint8_t* q8,
                                                int64_t n) {
    const int64_t t = blockIdx.x;
    for (int64_t c0 = 0; c0 < n; c0 += 4 * kWideThreads) {
        const int64_t i = c0 + 4 * threadIdx.x;
        const bool active = i < n;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (active) {
            const float4 xv = *reinterpret_cast<const float4*>(xr + i);
            const float4 wv = *reinterpret_cast<const float4*>(w + i);
            v[0] = xv.x * scale * wv.x, v[1] = xv.y * scale * wv.y;
            v[2] = xv.z * scale * wv.z, v[3] = xv.w * scale * wv.w;
            *reinterpret_cast<float4*>(y + t * n + i) = make_float4(v[0], v[1], v[2], v[3]);
        }
        if (q8) store_q8_four(v, active, i, n, q8 + size_t(t) * q8::row_bytes(n));
    }
}

template <bool EARLY>
__global__ void __launch_bounds__(kWideThreads)
    rms_norm_wide_kernel(const float* x, const int32_t* src, const float* w, float* y, int64_t n, float eps,
                         uint8_t* q8) {
    start_after_previous_kernel<EARLY>();
    const int64_t t = blockIdx.x;
    const float* xr = x + (src ? src[t] : t) * n;
    float s = 0.0f;
    for (int64_t i = 4 * threadIdx.x; i < n; i += 4 * kWideThreads) {
        const float4 v = *reinterpret_cast<const float4*>(xr + i);
        s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    store_norm_wide(xr, rsqrtf(block_sum<kWideThreads>(s) / float(n) + eps), w, y, q8, n);
}

template <bool EARLY>
__global__ void __launch_bounds__(kWideThreads)
    add_rms_norm_wide_kernel(float* x, const float* add, const float* w, float* y, int64_t n, float eps,
                             uint8_t* q8) {
    start_after_previous_kernel<EARLY>();
    const int64_t t = blockIdx.x;
    float* xr = x + t * n;
    const float* ar = add + t * n;
    float s = 0.0f;
    for (int64_t i = 4 * threadIdx.x; i < n; i += 4 * kWideThreads) {
        float4 v = *reinterpret_cast<const float4*>(xr + i);
        const float4 a = *reinterpret_cast<const float4*>(ar + i);
        v.x += a.x, v.y += a.y, v.z += a.z, v.w += a.w;
        *reinterpret_cast<float4*>(xr + i) = v;  // read back below by this same thread
        s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    if (!w) return;
    store_norm_wide(xr, rsqrtf(block_sum<kWideThreads>(s) / float(n) + eps), w, y, q8, n);
}

__global__ void silu_mul_kernel(float* gate, const float* up, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

__global__ void to_half_kernel(const float* x, __half* y, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half_rn(x[i]);
}

__global__ void add_bias_kernel(float* y, int64_t ld, const float* bias, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[blockIdx.y * ld + i] += bias[i];
}

// One block per row: its cos/sin table first (double precision, as Model::rope_table),
// then every query and key head, then the row's K and V into its slot.
template <bool EARLY>
__global__ void rope_store_kernel(float* q, const float* k, const float* v, int n_head, const float* inv_freq,
                                  bool neox, RowTables rt, KvLayout kv, int layer) {
    if constexpr (EARLY) let_next_kernel_start();
    extern __shared__ float cos_sin[];
    const int t = blockIdx.x, D = kv.head_dim, half = D / 2, KV = kv.n_kv_heads;
    const int pos = rt.pos[t];
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        double s, c;
        sincos(double(pos) * double(inv_freq[i]), &s, &c);
        cos_sin[2 * i] = float(c);
        cos_sin[2 * i + 1] = float(s);
    }
    __syncthreads();
    const int page = rt.tables[rt.table[t] + pos / kv.page_size];
    const int64_t slot = (int64_t(layer) * kv.pages * kv.page_size + int64_t(page) * kv.page_size +
                          pos % kv.page_size) * kv.slot_elems();
    // The table and the slot come from the step's positions and block tables, which no
    // kernel writes: computed while the Q/K/V products before this kernel finish.
    if constexpr (EARLY) wait_for_previous_kernel();
    for (int p = threadIdx.x; p < (n_head + KV) * half; p += blockDim.x) {
        const int h = p / half, i = p % half;
        const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        if (h < n_head) {
            float* x = q + (int64_t(t) * n_head + h) * D;
            const float x0 = x[i0], x1 = x[i1];
            x[i0] = x0 * c - x1 * s;
            x[i1] = x0 * s + x1 * c;
        } else {
            const int kh = h - n_head;
            const float* x = k + (int64_t(t) * KV + kh) * D;
            const float x0 = x[i0], x1 = x[i1];
            __half* to = reinterpret_cast<__half*>(kv.k) + slot + int64_t(kh) * D;
            to[i0] = __float2half_rn(x0 * c - x1 * s);
            to[i1] = __float2half_rn(x0 * s + x1 * c);
        }
    }
    for (int e = threadIdx.x; e < KV * D; e += blockDim.x)
        reinterpret_cast<__half*>(kv.v)[slot + e] = __float2half_rn(v[int64_t(t) * KV * D + e]);
}

unsigned blocks_for(int64_t n, int per_block) { return unsigned((n + per_block - 1) / per_block); }

} // namespace

int device_count(std::string* why_not) {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        if (why_not) *why_not = cudaGetErrorString(err);
        return 0;
    }
    if (n == 0 && why_not) *why_not = "no CUDA device present";
    return n;
}

void rms_norm(const float* x, const int32_t* src, const float* w, float* y, int rows, int64_t n, float eps,
              void* stream, void* q8) {
    const auto s = static_cast<cudaStream_t>(stream);
    auto* q = n % q8::kBlock == 0 ? static_cast<uint8_t*>(q8) : nullptr;
    if (rows > 0 && n % q8::kBlock == 0)
        launch_kernel(rms_norm_wide_kernel<true>, rms_norm_wide_kernel<false>, rows, kWideThreads, 0, s, x, src, w, y,
                      n, eps, q);
    else if (rows > 0)
        launch_kernel(rms_norm_kernel<true>, rms_norm_kernel<false>, rows, kNormThreads, 0, s, x, src, w, y, n, eps, q);
}

void add_rms_norm(float* x, const float* add, const float* w, float* y, int rows, int64_t n, float eps,
                  void* stream, void* q8) {
    const auto s = static_cast<cudaStream_t>(stream);
    auto* q = n % q8::kBlock == 0 ? static_cast<uint8_t*>(q8) : nullptr;
    if (rows > 0 && n % q8::kBlock == 0)
        launch_kernel(add_rms_norm_wide_kernel<true>, add_rms_norm_wide_kernel<false>, rows, kWideThreads, 0, s, x,
                      add, w, y, n, eps, q);
    else if (rows > 0)
        launch_kernel(add_rms_norm_kernel<true>, add_rms_norm_kernel<false>, rows, kNormThreads, 0, s, x, add, w, y,
                      n, eps, q);
}

void silu_mul(float* gate, const float* up, int64_t n, void* stream) {
    // Plain launches for the steps of many rows, around cuBLAS products.
    if (n > 0) silu_mul_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(gate, up, n);
}

void to_half(const float* x, uint16_t* y, int64_t n, void* stream) {
    if (n > 0)
        to_half_kernel<<<blocks_for(n, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
            x, reinterpret_cast<__half*>(y), n);
}

void add_bias(float* y, int64_t ld, const float* bias, int rows, int64_t n, void* stream) {
    if (rows > 0 && n > 0)
        add_bias_kernel<<<dim3(blocks_for(n, 256), unsigned(rows)), 256, 0, static_cast<cudaStream_t>(stream)>>>(
            y, ld, bias, n);
}

void rope_store_kv(float* q, const float* k, const float* v, int rows, int n_head, const float* inv_freq,
                   bool neox, const RowTables& rt, const KvLayout& kv, int layer, void* stream) {
    if (rows > 0)
        // 512 threads: a decode step's single row is the whole launch.
        launch_kernel(rope_store_kernel<true>, rope_store_kernel<false>, rows, 512, size_t(kv.head_dim) * sizeof(float),
                      static_cast<cudaStream_t>(stream), q, k, v, n_head, inv_freq, neox, rt, kv, layer);
}

} // namespace arbor::cuda
