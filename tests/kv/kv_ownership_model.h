// An independent reference for the stress test: who owns which page (the cache and
// each request), and a naive page-granular prefix trie standing in for the radix
// cache, keyed by (namespace, page of the previous chunk, chunk tokens). A tail is an
// entry whose chunk is shorter than a page. Every mismatch with the real pool or cache
// throws std::runtime_error naming it.
#pragma once

#include "kv/page_pool.h"
#include "kv/radix_cache.h"

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

namespace arbor::kv::test {

class OwnershipModel {
public:
    static constexpr int64_t kCache = -1;

    OwnershipModel(int32_t capacity, int32_t page_size);

    // A request (id >= 0) or the cache takes / drops one reference.
    void add(int32_t page, int64_t owner);
    void remove(int32_t page, int64_t owner);

    // The pages a correct match must return.
    std::vector<int32_t> expected_match(uint64_t ns, std::span<const int32_t> tokens) const;
    // The most leading tokens of `rest` that a cached page right after `matched` shares
    // (below page size), and whether `page` is such a page.
    int32_t expected_partial(uint64_t ns, const std::vector<int32_t>& matched, std::span<const int32_t> rest,
                             int32_t page) const;
    // Applies an insert to the reference trie; returns how many pages it newly caches.
    // A page (or tail) added where a cached tail is a prefix of its tokens supersedes
    // that tail; a tail that some entry at its place starts with is not added.
    int32_t apply_insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> pages,
                         bool partial_tail = false);
    // After cache.evict() returned `evicted`: drops the trie entries whose pages the pool
    // now reports free, and checks they were cache-only, as many as evicted, and that
    // the trie is still closed under prefixes (children went before parents).
    void apply_evictions(const PagePool& pool, int32_t evicted);
    void apply_clear();
    // Cache-only pages with no page held by someone else below them.
    int32_t expected_evictable() const;
    int32_t cached_count() const { return int32_t(entries_.size()); }
    bool is_tail(int32_t page) const;
    // Tails superseded so far, and how many of them by the same page offered fuller.
    int32_t tails_replaced() const { return tails_replaced_; }
    int32_t tails_refilled() const { return tails_refilled_; }

    // Refcount of every page == number of owners, used/free counts, cache counters.
    void check(const PagePool& pool, const RadixCache& cache) const;

private:
    using Key = std::tuple<uint64_t, int32_t, std::vector<int32_t>>;  // ns, previous page, tokens
    struct Cached {
        bool cached = false;
        int32_t parent = -1;  // page of the previous chunk, -1 at the root
        std::map<Key, int32_t>::iterator entry;
    };

    Key key(uint64_t ns, int32_t parent, std::span<const int32_t> tokens, size_t chunk) const;
    // Entries of the place (ns, parent), whole pages and tails.
    std::vector<std::map<Key, int32_t>::iterator> place(uint64_t ns, int32_t parent);
    void add_entry(Key key, int32_t page, int32_t parent);
    // Drops the tails at (ns, parent) that are proper prefixes of `tokens`.
    void drop_tails_below(uint64_t ns, int32_t parent, const std::vector<int32_t>& tokens, int32_t new_page);

    int32_t page_size_;
    std::vector<std::vector<int64_t>> owners_;
    std::map<Key, int32_t> entries_;
    std::vector<Cached> cached_;
    int32_t tails_replaced_ = 0, tails_refilled_ = 0;
};

} // namespace arbor::kv::test
