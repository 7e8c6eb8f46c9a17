// Host storage of the paged KV cache. Layout, per layer and page:
//   K: [kv_head][head_dim][key_stride] then V: [kv_head][slot][head_dim]
// A head's keys are stored as columns (element d of slot j at d * key_stride + j, the
// stride the page size rounded up to eight): the score kernels multiply a broadcast
// query element by eight keys at once and need no horizontal sums (dot_columns_f16).
// A head's values are rows, each scaled by its weight and added whole.
// Elements are F16 (the default: half the memory traffic of attention and twice the
// tokens per budget), F32 or Q8_0 (BackendOptions::kv_type); positions are converted
// once, when stored.
// Q8_0 quantizes each position's head vector in blocks of 32 along the head dimension
// (GGUF's Q8_0: one half-float scale per block), the axis both keys and values are
// produced along: the int8 elements take the places F16/F32 elements have, and after
// them come the scales, for keys [head_dim / 32][key_stride] (block b of slot j at
// b * key_stride + j, the same columns), for values [slot][head_dim / 32]. About
// 17/32 of F16's bytes; it needs head_dim to be a multiple of 32.
#pragma once

#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/kernels/huge_pages.h"
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
          type_(options.kv_type), element_bytes_(kv_element_bytes(type_)) {
        if (page_size_ <= 0) throw Error("KV page size must be positive");
        if (type_ == KvType::Q8_0 && head_dim_ % kQ8BlockSize != 0)
            throw Error("Q8_0 KV needs a head dimension that is a multiple of " + std::to_string(kQ8BlockSize) +
                        "; this model's is " + std::to_string(head_dim_) + " (use F16 KV)");
        key_stride_ = (page_size_ + 7) / 8 * 8;
        scale_blocks_ = type_ == KvType::Q8_0 ? head_dim_ / int32_t(kQ8BlockSize) : 0;
        key_head_bytes_ = size_t(key_stride_) * (size_t(head_dim_) * element_bytes_ + size_t(scale_blocks_) * 2);
        // (Rounded up to 8 bytes: the next head's scales stay aligned and a page's bytes
        // a multiple of 4.)
        value_head_bytes_ =
            (size_t(page_size_) * (size_t(head_dim_) * element_bytes_ + size_t(scale_blocks_) * 2) + 7) / 8 * 8;
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
        // reads positions that were stored. In huge pages: a decode row reads a few KiB
        // from each of thousands of pages scattered over the pool, and with 4 KiB pages
        // nearly every one was a TLB miss that the prefetches could not hide (README.md,
        // Numerics). A page's bytes are a multiple of 4.
        data_ = allocate_huge_pages(size_t(page_count_) * size_t(n_layer_) * layer_page_bytes_);
    }

    int32_t page_size() const { return page_size_; }
    int32_t page_count() const { return page_count_; }
    size_t page_bytes() const { return size_t(n_layer_) * layer_page_bytes_; }
    KvType type() const { return type_; }

    // Elements from one key element to the same element of the next slot.
    int32_t key_stride() const { return key_stride_; }
    size_t key_head_bytes() const { return key_head_bytes_; }
    // The head's keys of a page (columns, slot 0 first) and its value rows from `slot` on,
    // elements of type() (for Q8_0 the int8 elements).
    const void* keys(int32_t layer, int32_t page, int32_t kv_head) const {
        return base(layer, page) + size_t(kv_head) * key_head_bytes_;
    }
    const void* values(int32_t layer, int32_t page, int32_t kv_head, int32_t slot) const {
        return base(layer, page) + values_offset(kv_head) + row_offset(slot);
    }
    // Q8_0 only: the scales of those keys (rows of key_stride()) and of those value rows.
    const uint16_t* key_scales(int32_t layer, int32_t page, int32_t kv_head) const {
        return reinterpret_cast<const uint16_t*>(static_cast<const std::byte*>(keys(layer, page, kv_head)) +
                                                 key_scales_offset());
    }
    const uint16_t* value_scales(int32_t layer, int32_t page, int32_t kv_head, int32_t slot) const {
        return reinterpret_cast<const uint16_t*>(base(layer, page) + values_offset(kv_head) +
                                                 value_scales_offset(slot));
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
            } else if (type_ == KvType::Q8_0) {
                std::byte* scale_column = page + size_t(h) * key_head_bytes_ + key_scales_offset() + size_t(slot) * 2;
                for (int32_t b = 0; b < scale_blocks_; ++b) {
                    int8_t q[kQ8BlockSize];
                    uint16_t scale;
                    q8_0_from_f32(key + b * kQ8BlockSize, q, &scale, kQ8BlockSize);
                    for (int32_t i = 0; i < int32_t(kQ8BlockSize); ++i)
                        std::memcpy(column + size_t(b * kQ8BlockSize + i) * key_row_bytes(), &q[i], 1);
                    std::memcpy(scale_column + size_t(b) * size_t(key_stride_) * 2, &scale, sizeof scale);
                }
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
            put_row(v + size_t(h) * size_t(head_dim_), page + values_offset(h), slot);
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
                for (int32_t b = 0; b < scale_blocks_; ++b) {
                    const size_t at = size_t(h) * key_head_bytes_ + key_scales_offset() + size_t(b) * size_t(key_stride_) * 2;
                    std::memcpy(to + at, from + at, size_t(n_positions) * 2);
                }
                std::memcpy(to + values_offset(h), from + values_offset(h), value_bytes);
                const size_t scales_at = values_offset(h) + value_scales_offset(0);
                std::memcpy(to + scales_at, from + scales_at, value_scales_offset(n_positions) - value_scales_offset(0));
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
    static size_t kv_element_bytes(KvType type) {
        switch (type) {
        case KvType::F16: return sizeof(uint16_t);
        case KvType::F32: return sizeof(float);
        case KvType::Q8_0: return sizeof(int8_t);
        }
        throw Error("unknown KV element type");
    }
    size_t row_offset(int32_t slot) const { return size_t(slot) * size_t(head_dim_) * element_bytes_; }
    // From a head's keys to their scales, and from its values to slot's scales (Q8_0).
    size_t key_scales_offset() const { return size_t(head_dim_) * key_row_bytes(); }
    size_t value_scales_offset(int32_t slot) const {
        return row_offset(page_size_) + size_t(slot) * size_t(scale_blocks_) * 2;
    }
    size_t key_row_bytes() const { return size_t(key_stride_) * element_bytes_; }
    size_t values_offset(int32_t kv_head) const {
        return size_t(n_head_kv_) * key_head_bytes_ + size_t(kv_head) * value_head_bytes_;
    }

    // One head's head_dim values into its slot of the head's values, converted to the
    // storage type.
    void put_row(const float* from, std::byte* head_values, int32_t slot) const {
        std::byte* to = head_values + row_offset(slot);
        if (type_ == KvType::F32) std::memcpy(to, from, size_t(head_dim_) * sizeof(float));
        else if (type_ == KvType::F16) f16_from_f32(from, reinterpret_cast<uint16_t*>(to), head_dim_);
        else
            q8_0_from_f32(from, reinterpret_cast<int8_t*>(to),
                          reinterpret_cast<uint16_t*>(head_values + value_scales_offset(slot)), head_dim_);
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
    int32_t scale_blocks_ = 0;  // Q8_0 scales per position and head (0 for F16 and F32)
    size_t key_head_bytes_ = 0, value_head_bytes_ = 0, layer_page_bytes_ = 0;
    int32_t page_count_ = 0;
    std::shared_ptr<uint8_t[]> data_;  // page_count_ x n_layer_ x layer_page_bytes_, 2 MiB aligned
};

} // namespace arbor
