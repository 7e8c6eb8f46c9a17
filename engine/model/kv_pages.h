// Host storage of the paged KV cache. Layout, per layer and page:
//   K: [kv_head][head_dim][key_stride] then V: [kv_head][slot][head_dim]
// A head's keys are stored as columns (element d of slot j at d * key_stride + j, the
// stride the page size rounded up to eight): the score kernels multiply a broadcast
// query element by eight keys at once and need no horizontal sums (dot_columns_f16).
// A head's values are rows, each scaled by its weight and added whole.
// Elements are F16 (the default: half the memory traffic of attention and twice the
// tokens per budget) or F32 (BackendOptions::kv_type); positions are converted once,
// when stored.
#pragma once

#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/cpu_ops.h"
#include "arbor/model.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace arbor {

class KvPages {
public:
    KvPages(const ModelConfig& cfg, const BackendOptions& options)
        : page_size_(options.page_size), n_layer_(cfg.n_layer), n_head_kv_(cfg.n_head_kv), head_dim_(cfg.head_dim),
          type_(options.kv_type), element_bytes_(type_ == KvType::F16 ? sizeof(uint16_t) : sizeof(float)) {
        if (page_size_ <= 0) throw Error("KV page size must be positive");
        key_stride_ = (page_size_ + 7) / 8 * 8;
        key_head_bytes_ = size_t(key_stride_) * size_t(head_dim_) * element_bytes_;
        value_head_bytes_ = size_t(page_size_) * size_t(head_dim_) * element_bytes_;
        layer_page_bytes_ = size_t(n_head_kv_) * (key_head_bytes_ + value_head_bytes_);
        const size_t bytes_per_page = page_bytes();
        const size_t pages = options.kv_tokens > 0
                                 ? (size_t(options.kv_tokens) + size_t(page_size_) - 1) / size_t(page_size_)
                                 : options.kv_budget_bytes / bytes_per_page;
        page_count_ = int32_t(std::min<size_t>(pages, size_t(1) << 30));
        if (page_count_ < 1)
            throw Error("KV memory budget of " + std::to_string(options.kv_budget_bytes) +
                        " bytes holds no page (one page needs " + std::to_string(bytes_per_page) + ")");
        // Left uninitialised: the OS commits pages on first write, and attention only
        // reads positions that were stored. (Float storage for its cache-line alignment;
        // a page's bytes are a multiple of 4.)
        data_ = make_aligned_floats_for_overwrite(size_t(page_count_) * size_t(n_layer_) * layer_page_bytes_ /
                                                  sizeof(float));
    }

    int32_t page_size() const { return page_size_; }
    int32_t page_count() const { return page_count_; }
    size_t page_bytes() const { return size_t(n_layer_) * layer_page_bytes_; }
    KvType type() const { return type_; }

    // Elements from one key element to the same element of the next slot.
    int32_t key_stride() const { return key_stride_; }
    size_t key_head_bytes() const { return key_head_bytes_; }
    // The head's keys of a page (columns, slot 0 first) and its value rows from `slot` on,
    // elements of type().
    const void* keys(int32_t layer, int32_t page, int32_t kv_head) const {
        return base(layer, page) + size_t(kv_head) * key_head_bytes_;
    }
    const void* values(int32_t layer, int32_t page, int32_t kv_head, int32_t slot) const {
        return base(layer, page) + values_offset(kv_head) + row_offset(slot);
    }

    // Writes one position's K and V (kv_dim floats each, heads concatenated).
    void store(int32_t layer, std::span<const int32_t> block_table, int32_t pos, const float* k, const float* v) {
        std::byte* page = base(layer, block_table[size_t(pos / page_size_)]);
        const int32_t slot = pos % page_size_;
        for (int32_t h = 0; h < n_head_kv_; ++h) {
            const float* key = k + size_t(h) * size_t(head_dim_);
            std::byte* column = page + size_t(h) * key_head_bytes_ + size_t(slot) * element_bytes_;
            if (type_ == KvType::F32) {
                for (int32_t d = 0; d < head_dim_; ++d)
                    std::memcpy(column + size_t(d) * key_row_bytes(), &key[d], sizeof(float));
            } else {
                // Converted a chunk at a time (stores run on several threads at once).
                constexpr int32_t kChunk = 64;
                uint16_t halves[kChunk];
                for (int32_t d0 = 0; d0 < head_dim_; d0 += kChunk) {
                    const int32_t n = std::min(kChunk, head_dim_ - d0);
                    f16_from_f32(key + d0, halves, n);
                    for (int32_t d = 0; d < n; ++d)
                        std::memcpy(column + size_t(d0 + d) * key_row_bytes(), &halves[d], sizeof(uint16_t));
                }
            }
            put_row(v + size_t(h) * size_t(head_dim_), page + values_offset(h) + row_offset(slot));
        }
    }

    void copy_prefix(int32_t src, int32_t dst, int32_t n_positions) {
        if (src < 0 || src >= page_count_ || dst < 0 || dst >= page_count_ || n_positions < 0 || n_positions > page_size_)
            throw Error("KV page copy out of range");
        const size_t key_bytes = size_t(n_positions) * element_bytes_, value_bytes = row_offset(n_positions);
        for (int32_t layer = 0; layer < n_layer_; ++layer) {
            std::byte* to = base(layer, dst);
            const std::byte* from = base(layer, src);
            for (int32_t h = 0; h < n_head_kv_; ++h) {
                for (int32_t d = 0; d < head_dim_; ++d) {
                    const size_t at = size_t(h) * key_head_bytes_ + size_t(d) * key_row_bytes();
                    std::memcpy(to + at, from + at, key_bytes);
                }
                std::memcpy(to + values_offset(h), from + values_offset(h), value_bytes);
            }
        }
    }

    // A page's bytes, layer after layer (page_bytes() in all): what the disk tier stores.
    void read_page(int32_t page, std::span<std::byte> out) const {
        check_page_io(page, out.size());
        for (int32_t layer = 0; layer < n_layer_; ++layer)
            std::memcpy(out.data() + size_t(layer) * layer_page_bytes_, base(layer, page), layer_page_bytes_);
    }
    void write_page(int32_t page, std::span<const std::byte> bytes) {
        check_page_io(page, bytes.size());
        for (int32_t layer = 0; layer < n_layer_; ++layer)
            std::memcpy(base(layer, page), bytes.data() + size_t(layer) * layer_page_bytes_, layer_page_bytes_);
    }

private:
    void check_page_io(int32_t page, size_t bytes) const {
        if (page < 0 || page >= page_count_ || bytes != page_bytes())
            throw Error("KV page bytes: page " + std::to_string(page) + " of " + std::to_string(page_count_) + ", " +
                        std::to_string(bytes) + " bytes for " + std::to_string(page_bytes()));
    }
    size_t row_offset(int32_t slot) const { return size_t(slot) * size_t(head_dim_) * element_bytes_; }
    size_t key_row_bytes() const { return size_t(key_stride_) * element_bytes_; }
    size_t values_offset(int32_t kv_head) const {
        return size_t(n_head_kv_) * key_head_bytes_ + size_t(kv_head) * value_head_bytes_;
    }

    // One head's head_dim values into its slot, converted to the storage type.
    void put_row(const float* from, std::byte* to) const {
        if (type_ == KvType::F32) {
            std::memcpy(to, from, size_t(head_dim_) * sizeof(float));
            return;
        }
        f16_from_f32(from, reinterpret_cast<uint16_t*>(to), head_dim_);
    }

    std::byte* base(int32_t layer, int32_t page) {
        return reinterpret_cast<std::byte*>(data_.get()) +
               (size_t(layer) * size_t(page_count_) + size_t(page)) * layer_page_bytes_;
    }
    const std::byte* base(int32_t layer, int32_t page) const {
        return reinterpret_cast<const std::byte*>(data_.get()) +
               (size_t(layer) * size_t(page_count_) + size_t(page)) * layer_page_bytes_;
    }

    int32_t page_size_, n_layer_, n_head_kv_, head_dim_;
    KvType type_;
    size_t element_bytes_;
    int32_t key_stride_ = 0;
    size_t key_head_bytes_ = 0, value_head_bytes_ = 0, layer_page_bytes_ = 0;
    int32_t page_count_ = 0;
    AlignedFloatArray data_;
};

} // namespace arbor
