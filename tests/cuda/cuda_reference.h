// Inputs and scalar references for the CUDA kernel tests: valid random blocks of every
// weight type, and paged attention computed naively in double precision.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <random>
#include <vector>

namespace arbor::gpu_check {

// rows x cols of type: random codes with scales that keep values near N(0, 0.1).
std::vector<uint8_t> random_weights(DType type, int64_t rows, int64_t cols, std::mt19937& rng);

std::vector<float> random_floats(size_t n, std::mt19937& rng, float sigma = 1.0f);

// A paged cache as the kernels see it: per layer, K then V planes of pages x page_size
// slots of n_kv_heads x head_dim halves.
struct HostCache {
    int32_t layers = 1, pages = 0, page_size = 0, n_kv_heads = 0, head_dim = 0;
    std::vector<uint16_t> k, v;
    size_t index(int layer, int page, int slot, int head) const {
        return ((size_t(layer) * pages + size_t(page)) * page_size + size_t(slot)) * size_t(n_kv_heads) * head_dim +
               size_t(head) * head_dim;
    }
};

// Causal attention of one row at position pos over positions 0..pos, read through
// table: out (n_head x head_dim) from q (n_head x head_dim), softmax in double.
void reference_attention(const HostCache& cache, int layer, const std::vector<int32_t>& table, int pos,
                         const float* q, int n_head, float* out);

} // namespace arbor::gpu_check
