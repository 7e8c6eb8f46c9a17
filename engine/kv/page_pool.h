// A pool of fixed-size KV pages identified by ids 0..capacity-1, with per-page reference
// counts. Owners (running sequences, the radix cache) each hold one reference; a page
// is free exactly when its count is 0. Pure bookkeeping: the memory behind a page id
// belongs to the backend.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace arbor::kv {

class PagePool {
public:
    // Throws arbor::Error when n_pages is negative.
    explicit PagePool(int32_t n_pages);

    int32_t capacity() const { return int32_t(refcount_.size()); }
    int32_t free_count() const { return int32_t(free_.size()); }
    int32_t used_count() const { return capacity() - free_count(); }

    // A free page with refcount 1, or nullopt when none is free.
    std::optional<int32_t> allocate();
    // n free pages with refcount 1 each, or an empty vector (nothing taken) when fewer
    // than n are free.
    std::vector<int32_t> allocate_many(int32_t n);
    // retain/release throw std::logic_error (and change nothing) for an id out of range
    // or a page that is not in use: releasing a free page is a double release.
    void retain(int32_t page);
    void release(int32_t page);
    // 0 for a free page; throws std::logic_error for an id out of range.
    int32_t refcount(int32_t page) const;

    // Throws std::logic_error describing the first violation found: a negative count,
    // a free-list entry out of range, listed twice or still referenced, or a page with
    // count 0 missing from the free list.
    void check_invariants() const;

private:
    friend struct PagePoolTestAccess;  // lets tests corrupt state to exercise check_invariants

    void check_id(int32_t page, const char* what) const;

    std::vector<int32_t> refcount_;
    std::vector<int32_t> free_;  // stack: ascending ids at first, then the last released first
};

} // namespace arbor::kv
