// Matrix-vector products on quantized weights: one warp per output row, each lane
// dequantizing its share of the row's blocks on the fly.
#include "arbor/kernels/cuda_kernels.h"
#include "arbor/kernels/quant_blocks.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace arbor::cuda {
namespace {

__device__ inline float half_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__device__ inline float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

struct RowF32 {
    static constexpr int block = 1;
    __device__ static float dot(const void* row, int64_t b, const float* x) {
        return static_cast<const float*>(row)[b] * x[b];
    }
};

struct RowF16 {
    static constexpr int block = 1;
    __device__ static float dot(const void* row, int64_t b, const float* x) {
        return half_to_float(static_cast<const uint16_t*>(row)[b]) * x[b];
    }
};

struct RowQ8_0 {
    static constexpr int block = QK8_0;
    __device__ static float dot(const void* row, int64_t b, const float* x) {
        const BlockQ8_0& blk = static_cast<const BlockQ8_0*>(row)[b];
        const float* xb = x + b * QK8_0;
        float s = 0.0f;
        for (int i = 0; i < QK8_0; ++i) s += float(blk.qs[i]) * xb[i];
        return s * half_to_float(blk.d);
    }
};

struct RowQ4_1 {
    static constexpr int block = QK4_1;
    __device__ static float dot(const void* row, int64_t b, const float* x) {
        const BlockQ4_1& blk = static_cast<const BlockQ4_1*>(row)[b];
        const float* xb = x + b * QK4_1;
        float s = 0.0f, sx = 0.0f;
        for (int i = 0; i < QK4_1 / 2; ++i) {
            s += float(blk.qs[i] & 0x0f) * xb[i] + float(blk.qs[i] >> 4) * xb[i + QK4_1 / 2];
            sx += xb[i] + xb[i + QK4_1 / 2];
        }
        return s * half_to_float(blk.d) + sx * half_to_float(blk.m);
    }
};

template <class Row>
__global__ void matvec_kernel(const uint8_t* weight, size_t row_bytes, int64_t rows, int64_t cols, const float* x,
                              float* y) {
    const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (r >= rows) return;
    const int lane = threadIdx.x % 32;
    const void* row = weight + size_t(r) * row_bytes;
    float s = 0.0f;
    for (int64_t b = lane; b < cols / Row::block; b += 32) s += Row::dot(row, b, x);
    s = warp_sum(s);
    if (lane == 0) y[r] = s;
}

template <class Row>
void launch(const void* weight, int64_t rows, int64_t cols, const float* x, float* y, cudaStream_t stream, DType type) {
    constexpr int warps = 4;
    const unsigned grid = unsigned((rows + warps - 1) / warps);
    matvec_kernel<Row><<<grid, warps * 32, 0, stream>>>(static_cast<const uint8_t*>(weight), row_bytes(type, cols),
                                                        rows, cols, x, y);
}

__global__ void rms_norm_kernel(const float* x, const float* w, float* y, int64_t n, float eps) {
    __shared__ float partial[32];
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i] * x[i];
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
        s = warp_sum(s);
        if (threadIdx.x == 0) partial[0] = rsqrtf(s / float(n) + eps);
    }
    __syncthreads();
    const float scale = partial[0];
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i] * scale * w[i];
}

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

bool matvec(DType type, const void* weight, int64_t rows, int64_t cols, const float* x, float* y, void* stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    switch (type) {
    case DType::F32: launch<RowF32>(weight, rows, cols, x, y, s, type); return true;
    case DType::F16: launch<RowF16>(weight, rows, cols, x, y, s, type); return true;
    case DType::Q8_0: launch<RowQ8_0>(weight, rows, cols, x, y, s, type); return true;
    case DType::Q4_1: launch<RowQ4_1>(weight, rows, cols, x, y, s, type); return true;
    default: return false;
    }
}

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps, void* stream) {
    rms_norm_kernel<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, w, y, n, eps);
}

} // namespace arbor::cuda
