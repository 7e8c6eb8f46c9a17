// arbor-bench-cuda: the CUDA kernels alone on one GPU, each timed with CUDA events
// (median of 50 launches after 5 warm-ups): a plain read of device memory (the
// bandwidth reference), the decode products of an 8B-shaped layer (Llama-3.1-8B:
// 4096 wide, 14336 FFN) in several weight types at 1 and 8 rows, and attention of
// one decode row after 4096 positions. Products report the GB/s they read weights at;
// "int8" rows take the integer path on activations quantized beforehand, "int8+q" rows
// include that quantization (one launch per input).
#include "arbor/kernels/cuda_kernels.h"
#include "cuda_reference.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace arbor;

namespace {

__global__ void read_kernel(const uint4* data, size_t n, unsigned* sink) {
    unsigned acc = 0;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        const uint4 v = data[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}

// Median microseconds of fn over 50 launches.
double time_us(const std::function<void()>& fn) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 5; ++i) fn();
    std::vector<double> us;
    for (int i = 0; i < 50; ++i) {
        cudaEventRecord(a);
        fn();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, a, b);
        us.push_back(double(ms) * 1000.0);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
}

template <class T>
T* device_copy(const std::vector<T>& v) {
    T* p = nullptr;
    cudaMalloc(&p, v.size() * sizeof(T));
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return p;
}

} // namespace

int main() {
    std::string why;
    if (cuda::device_count(&why) == 0) {
        std::printf("arbor-bench-cuda: no CUDA device: %s\n", why.c_str());
        return 1;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device: %s, %d SMs\n\n| kernel | shape | rows | us | GB/s |\n|---|---|---|---|---|\n", prop.name,
                prop.multiProcessorCount);
    std::mt19937 rng(1);
    {
        const size_t bytes = size_t(1) << 30;
        uint4* data = nullptr;
        unsigned* sink = nullptr;
        cudaMalloc(&data, bytes);
        cudaMemset(data, 1, bytes);
        cudaMalloc(&sink, 4);
        const double us = time_us([&] { read_kernel<<<prop.multiProcessorCount * 8, 512>>>(data, bytes / 16, sink); });
        std::printf("| plain read | 1 GiB | - | %.1f | %.0f |\n", us, double(bytes) / us / 1e3);
        cudaFree(data);
        cudaFree(sink);
    }
    const int64_t E = 4096, FF = 14336;
    const std::vector<float> x = gpu_check::random_floats(size_t(8 * FF), rng);
    float* dx = device_copy(x);
    float* dy = nullptr;
    cudaMalloc(&dy, size_t(8) * FF * 2 * sizeof(float));
    void* dq = nullptr;
    cudaMalloc(&dq, cuda::q8_bytes(FF, 8));
    for (DType type : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::F16}) {
        const std::string tname(dtype_name(type));
        // The float path, then the integer one (already quantized, and with the quantization).
        struct Path { const char* suffix; bool int8, quantize; };
        std::vector<Path> paths = {{"", false, false}};
        if (cuda::has_int8_path(type)) paths.push_back({" int8", true, false}), paths.push_back({" int8+q", true, true});
        struct Shape { const char* name; int64_t rows, cols; };
        for (const Shape s : {Shape{"wq 4096x4096", E, E}, Shape{"down 4096x14336", E, FF}}) {
            uint8_t* w = device_copy(gpu_check::random_weights(type, s.rows, s.cols, rng));
            const double mb = double(row_bytes(type, s.cols)) * double(s.rows) / 1e6;
            cuda::quantize_q8(dx, s.cols, 8, dq, nullptr);
            for (const Path& p : paths)
                for (int n_x : {1, 8}) {
                    const double us = time_us([&] {
                        if (p.quantize) cuda::quantize_q8(dx, s.cols, n_x, dq, nullptr);
                        cuda::matvec(type, w, s.rows, s.cols, dx, n_x, dy, nullptr, nullptr, p.int8 ? dq : nullptr);
                    });
                    std::printf("| matvec %s%s | %s | %d | %.1f | %.0f |\n", tname.c_str(), p.suffix, s.name, n_x, us,
                                mb / us * 1e3);
                }
            cudaFree(w);
        }
        uint8_t* gate = device_copy(gpu_check::random_weights(type, FF, E, rng));
        uint8_t* up = device_copy(gpu_check::random_weights(type, FF, E, rng));
        const double mb = 2.0 * double(row_bytes(type, E)) * double(FF) / 1e6;
        cuda::quantize_q8(dx, E, 1, dq, nullptr);
        for (const Path& p : paths) {
            const double us = time_us([&] {
                if (p.quantize) cuda::quantize_q8(dx, E, 1, dq, nullptr);
                cuda::matvec_gated(type, E, gate, up, FF, dx, 1, dy, nullptr, p.int8 ? dq : nullptr);
            });
            std::printf("| gated %s%s | 2x 14336x4096 | 1 | %.1f | %.0f |\n", tname.c_str(), p.suffix, us, mb / us * 1e3);
        }
        cudaFree(gate);
        cudaFree(up);
    }
    cudaFree(dq);
    {
        // One decode row at position 4095 over 32 heads sharing 8 KV heads of 128.
        const int P = 16, pages = 256, KV = 8, D = 128, n_head = 32, pos = 4095;
        const size_t elems = size_t(pages) * P * KV * D;
        std::vector<uint16_t> halves(elems, 0x3c00);
        uint16_t* k = device_copy(halves);
        uint16_t* v = device_copy(halves);
        std::vector<int32_t> table(pages);
        for (int i = 0; i < pages; ++i) table[size_t(i)] = (i * 37) % pages;
        int32_t* dtables = device_copy(table);
        int32_t* dpos = device_copy(std::vector<int32_t>{pos});
        int32_t* dtable = device_copy(std::vector<int32_t>{0});
        const int parts = pos / cuda::kAttentionPart + 1;
        std::vector<cuda::AttentionPart> list;
        for (int p = 0; p < parts; ++p) list.push_back({0, p, p});
        auto* dparts = device_copy(list);
        auto* dmerge = device_copy(std::vector<cuda::AttentionMerge>{{0, 0, parts}});
        float *q = nullptr, *out = nullptr, *pout = nullptr, *pstats = nullptr;
        cudaMalloc(&q, n_head * D * 4);
        cudaMemset(q, 0, n_head * D * 4);
        cudaMalloc(&out, n_head * D * 4);
        cudaMalloc(&pout, size_t(parts) * n_head * D * 4);
        cudaMalloc(&pstats, size_t(parts) * n_head * 2 * 4);
        const cuda::KvLayout kv{k, v, pages, P, KV, D};
        const cuda::RowTables rt{dpos, dtable, dtables};
        const double us = time_us([&] {
            cuda::attention(q, out, n_head, dparts, parts, rt, kv, 0, pout, pstats, nullptr);
            cuda::merge_attention(dmerge, 1, n_head, D, pout, pstats, out, nullptr);
        });
        const double mb = double(pos + 1) * KV * D * 2 * 2 / 1e6;
        std::printf("| attention + merge | 1 row @ 4096, 32/8 heads of 128 | 1 | %.1f | %.0f |\n", us, mb / us * 1e3);
    }
    return 0;
}
