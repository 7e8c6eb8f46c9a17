#include "cuda_reference.h"

#include "arbor/kernels/fp16.h"

#include <cmath>
#include <cstring>

namespace arbor::gpu_check {
namespace {

void put_half(uint8_t* at, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(at, &h, 2);
}

} // namespace

std::vector<float> random_floats(size_t n, std::mt19937& rng, float sigma) {
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> out(n);
    for (auto& v : out) v = normal(rng);
    return out;
}

std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    const DTypeInfo& info = dtype_info(type);
    const size_t bytes = row_bytes(type, cols) * size_t(rows);
    std::vector<uint8_t> out(bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.5f, 1.5f);
    if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {
        const std::vector<float> v = random_floats(size_t(rows * cols), rng, 0.1f);
        for (size_t i = 0; i < v.size(); ++i) {
            if (type == DType::F32) std::memcpy(&out[4 * i], &v[i], 4);
            else if (type == DType::F16) put_half(&out[2 * i], v[i]);
            else {
                uint32_t bits;
                std::memcpy(&bits, &v[i], 4);
                const uint16_t b = uint16_t(bits >> 16);
                std::memcpy(&out[2 * i], &b, 2);
            }
        }
        return out;
    }
    for (auto& b : out) b = uint8_t(byte(rng));
    // Offsets of each block's half-precision scale (and minimum) within the block.
    struct Halves { size_t d, m; };
    Halves h{0, SIZE_MAX};
    switch (type) {
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: h = {0, 2}; break;
    case DType::Q6_K: h = {208, SIZE_MAX}; break;
    default: break;
    }
    const float d_scale = type == DType::Q8_0 ? 0.001f : (info.block_size == 256 ? 0.002f : 0.02f);
    for (size_t at = 0; at < bytes; at += info.block_bytes) {
        put_half(&out[at + h.d], d_scale * scale(rng));
        if (h.m != SIZE_MAX) put_half(&out[at + h.m], (info.block_size == 256 ? 0.002f : -0.15f) * scale(rng));
    }
    return out;
}

void reference_attention(const HostCache& cache, int layer, const std::vector<int32_t>& table, int pos,
                         const float* q, int n_head, float* out) {
    const int D = cache.head_dim, G = n_head / cache.n_kv_heads;
    const double scale = 1.0 / std::sqrt(double(D));
    std::vector<double> scores(size_t(pos) + 1);
    for (int h = 0; h < n_head; ++h) {
        const int kvh = h / G;
        double max = -INFINITY;
        for (int p = 0; p <= pos; ++p) {
            const uint16_t* k = &cache.k[cache.index(layer, table[size_t(p / cache.page_size)], p % cache.page_size, kvh)];
            double s = 0.0;
            for (int d = 0; d < D; ++d) s += double(q[h * D + d]) * double(fp16_to_fp32(k[d]));
            scores[size_t(p)] = s * scale;
            max = std::max(max, scores[size_t(p)]);
        }
        double sum = 0.0;
        for (auto& s : scores) sum += (s = std::exp(s - max));
        for (int d = 0; d < D; ++d) {
            double o = 0.0;
            for (int p = 0; p <= pos; ++p)
                o += scores[size_t(p)] *
                     double(fp16_to_fp32(
                         cache.v[cache.index(layer, table[size_t(p / cache.page_size)], p % cache.page_size, kvh) + size_t(d)]));
            out[h * D + d] = float(o / sum);
        }
    }
}

} // namespace arbor::gpu_check
