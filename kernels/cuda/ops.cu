// Row-wise steps of the forward pass on the device: norms, residual adds, the gated
// activation, half conversion, biases, and RoPE with the store of K/V into their pages.
#include "arbor/kernels/cuda_kernels.h"
#include "q8_store.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace arbor::cuda {
namespace {

constexpr int kNormThreads = 256;

// Sum of v over the block (kNormThreads threads), returned to every thread.
__device__ float block_sum(float v) {
    __shared__ float partial[kNormThreads / 32];
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kNormThreads / 32; ++i) s += partial[i];
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

__global__ void rms_norm_kernel(const float* x, const int32_t* src, const float* w, float* y, int64_t n, float eps,
                                uint8_t* q8) {
    const int64_t t = blockIdx.x;
    const float* xr = x + (src ? src[t] : t) * n;
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kNormThreads) s += xr[i] * xr[i];
    store_norm(xr, rsqrtf(block_sum(s) / float(n) + eps), w, y, q8, n);
}

__global__ void add_rms_norm_kernel(float* x, const float* add, const float* w, float* y, int64_t n, float eps,
                                    uint8_t* q8) {
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
    store_norm(xr, rsqrtf(block_sum(s) / float(n) + eps), w, y, q8, n);
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
__global__ void rope_store_kernel(float* q, const float* k, const float* v, int n_head, const float* inv_freq,
                                  bool neox, RowTables rt, KvLayout kv, int layer) {
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
    if (rows > 0)
        rms_norm_kernel<<<rows, kNormThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            x, src, w, y, n, eps, n % q8::kBlock == 0 ? static_cast<uint8_t*>(q8) : nullptr);
}

void add_rms_norm(float* x, const float* add, const float* w, float* y, int rows, int64_t n, float eps,
                  void* stream, void* q8) {
    if (rows > 0)
        add_rms_norm_kernel<<<rows, kNormThreads, 0, static_cast<cudaStream_t>(stream)>>>(
            x, add, w, y, n, eps, n % q8::kBlock == 0 ? static_cast<uint8_t*>(q8) : nullptr);
}

void silu_mul(float* gate, const float* up, int64_t n, void* stream) {
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
        rope_store_kernel<<<rows, 128, size_t(kv.head_dim) * sizeof(float), static_cast<cudaStream_t>(stream)>>>(
            q, k, v, n_head, inv_freq, neox, rt, kv, layer);
}

} // namespace arbor::cuda
