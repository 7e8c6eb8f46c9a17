// Host storage of the paged KV cache. Layout, per layer and page:
//   K: [kv_head][slot][head_dim] then V: [kv_head][slot][head_dim]  (float)
// so that one head's keys within a page are contiguous for the attention loops.
#pragma once

#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/kernels/aligned_floats.h"
#include "arbor/model.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace arbor {

class KvPages {
public:
    KvPages(const ModelConfig& cfg, const BackendOptions& options)
        : page_size_(options.page_size), n_layer_(cfg.n_layer), n_head_kv_(cfg.n_head_kv), head_dim_(cfg.head_dim) {
        if (page_size_ <= 0) throw Error("KV page size must be positive");
        head_stride_ = size_t(page_size_) * size_t(head_dim_);
        layer_page_floats_ = 2 * size_t(n_head_kv_) * head_stride_;
        const size_t bytes_per_page = page_bytes();
        const size_t pages = options.kv_tokens > 0
                                 ? (size_t(options.kv_tokens) + size_t(page_size_) - 1) / size_t(page_size_)
                                 : options.kv_budget_bytes / bytes_per_page;
        page_count_ = int32_t(std::min<size_t>(pages, size_t(1) << 30));
        if (page_count_ < 1)
            throw Error("KV memory budget of " + std::to_string(options.kv_budget_bytes) +
                        " bytes holds no page (one page needs " + std::to_string(bytes_per_page) + ")");
        // Left uninitialised: the OS commits pages on first write, and attention only
        // reads positions that were stored.
        data_ = make_aligned_floats_for_overwrite(size_t(page_count_) * size_t(n_layer_) * layer_page_floats_);
    }

    int32_t page_size() const { return page_size_; }
    int32_t page_count() const { return page_count_; }
    size_t page_bytes() const { return size_t(n_layer_) * layer_page_floats_ * sizeof(float); }

    const float* keys(int32_t layer, int32_t page, int32_t kv_head) const {
        return base(layer, page) + size_t(kv_head) * head_stride_;
    }
    const float* values(int32_t layer, int32_t page, int32_t kv_head) const {
        return base(layer, page) + (size_t(n_head_kv_) + size_t(kv_head)) * head_stride_;
    }

    // Writes one position's K and V (kv_dim floats each, heads concatenated).
    void store(int32_t layer, std::span<const int32_t> block_table, int32_t pos, const float* k, const float* v) {
        float* page = base(layer, block_table[size_t(pos / page_size_)]);
        const size_t slot = size_t(pos % page_size_) * size_t(head_dim_);
        for (int32_t h = 0; h < n_head_kv_; ++h) {
            std::copy_n(k + size_t(h) * size_t(head_dim_), head_dim_, page + size_t(h) * head_stride_ + slot);
            std::copy_n(v + size_t(h) * size_t(head_dim_), head_dim_,
                        page + (size_t(n_head_kv_) + size_t(h)) * head_stride_ + slot);
        }
    }

    void copy_prefix(int32_t src, int32_t dst, int32_t n_positions) {
        if (src < 0 || src >= page_count_ || dst < 0 || dst >= page_count_ || n_positions < 0 || n_positions > page_size_)
            throw Error("KV page copy out of range");
        const size_t n = size_t(n_positions) * size_t(head_dim_);
        for (int32_t layer = 0; layer < n_layer_; ++layer)
            for (int32_t h = 0; h < 2 * n_head_kv_; ++h)
                std::copy_n(base(layer, src) + size_t(h) * head_stride_, n, base(layer, dst) + size_t(h) * head_stride_);
    }

private:
    float* base(int32_t layer, int32_t page) {
        return data_.get() + (size_t(layer) * size_t(page_count_) + size_t(page)) * layer_page_floats_;
    }
    const float* base(int32_t layer, int32_t page) const {
        return data_.get() + (size_t(layer) * size_t(page_count_) + size_t(page)) * layer_page_floats_;
    }

    int32_t page_size_, n_layer_, n_head_kv_, head_dim_;
    size_t head_stride_ = 0, layer_page_floats_ = 0;
    int32_t page_count_ = 0;
    AlignedFloatArray data_;
};

} // namespace arbor
