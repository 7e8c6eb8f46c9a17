#include "kv/page_pool.h"

#include "arbor/error.h"

#include <stdexcept>
#include <string>

namespace arbor::kv {

PagePool::PagePool(int32_t n_pages) {
    if (n_pages < 0) throw Error("KV page pool size must not be negative, got " + std::to_string(n_pages));
    refcount_.assign(size_t(n_pages), 0);
    free_.reserve(size_t(n_pages));
    for (int32_t p = n_pages - 1; p >= 0; --p) free_.push_back(p);
}

std::optional<int32_t> PagePool::allocate() {
    if (free_.empty()) return std::nullopt;
    const int32_t page = free_.back();
    free_.pop_back();
    refcount_[size_t(page)] = 1;
    return page;
}

std::vector<int32_t> PagePool::allocate_many(int32_t n) {
    std::vector<int32_t> pages;
    if (n <= 0 || n > free_count()) return pages;
    pages.reserve(size_t(n));
    for (int32_t i = 0; i < n; ++i) pages.push_back(*allocate());
    return pages;
}

void PagePool::check_id(int32_t page, const char* what) const {
    if (page < 0 || page >= capacity())
        throw std::logic_error(std::string(what) + ": page id " + std::to_string(page) + " is outside the pool of " +
                               std::to_string(capacity()) + " pages");
}

void PagePool::retain(int32_t page) {
    check_id(page, "retain");
    if (refcount_[size_t(page)] <= 0)
        throw std::logic_error("retain: page " + std::to_string(page) + " is free");
    ++refcount_[size_t(page)];
}

void PagePool::release(int32_t page) {
    check_id(page, "release");
    int32_t& count = refcount_[size_t(page)];
    if (count <= 0) throw std::logic_error("release: page " + std::to_string(page) + " is already free (double release)");
    if (--count == 0) free_.push_back(page);
}

int32_t PagePool::refcount(int32_t page) const {
    check_id(page, "refcount");
    return refcount_[size_t(page)];
}

void PagePool::check_invariants() const {
    std::vector<uint8_t> listed(refcount_.size(), 0);
    for (const int32_t page : free_) {
        if (page < 0 || page >= capacity())
            throw std::logic_error("page pool: free list holds id " + std::to_string(page) + " outside the pool");
        if (listed[size_t(page)])
            throw std::logic_error("page pool: page " + std::to_string(page) + " is on the free list twice");
        listed[size_t(page)] = 1;
        if (refcount_[size_t(page)] != 0)
            throw std::logic_error("page pool: free page " + std::to_string(page) + " has refcount " +
                                   std::to_string(refcount_[size_t(page)]));
    }
    for (size_t page = 0; page < refcount_.size(); ++page) {
        if (refcount_[page] < 0)
            throw std::logic_error("page pool: page " + std::to_string(page) + " has negative refcount " +
                                   std::to_string(refcount_[page]));
        if (refcount_[page] == 0 && !listed[page])
            throw std::logic_error("page pool: page " + std::to_string(page) + " has refcount 0 but is not on the free list");
    }
}

} // namespace arbor::kv
