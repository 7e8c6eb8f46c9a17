#include "kv_ownership_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace arbor::kv::test {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("ownership model: " + what); }

std::string owner_name(int64_t owner) {
    return owner == OwnershipModel::kCache ? std::string("the cache") : "request " + std::to_string(owner);
}

} // namespace

OwnershipModel::OwnershipModel(int32_t capacity, int32_t page_size)
    : page_size_(page_size), owners_(size_t(capacity)), cached_(size_t(capacity)) {}

void OwnershipModel::add(int32_t page, int64_t owner) {
    if (page < 0 || page >= int32_t(owners_.size())) fail("page id " + std::to_string(page) + " outside the pool");
    auto& list = owners_[size_t(page)];
    if (std::find(list.begin(), list.end(), owner) != list.end())
        fail("page " + std::to_string(page) + " owned twice by " + owner_name(owner));
    list.push_back(owner);
}

void OwnershipModel::remove(int32_t page, int64_t owner) {
    auto& list = owners_[size_t(page)];
    const auto it = std::find(list.begin(), list.end(), owner);
    if (it == list.end()) fail(owner_name(owner) + " drops page " + std::to_string(page) + " it does not own");
    list.erase(it);
}

OwnershipModel::Key OwnershipModel::key(uint64_t ns, int32_t parent, std::span<const int32_t> tokens,
                                        size_t chunk) const {
    const auto first = tokens.begin() + std::ptrdiff_t(chunk * size_t(page_size_));
    return Key{ns, parent, std::vector<int32_t>(first, first + page_size_)};
}

std::vector<int32_t> OwnershipModel::expected_match(uint64_t ns, std::span<const int32_t> tokens) const {
    std::vector<int32_t> pages;
    int32_t parent = -1;
    for (size_t i = 0; i < tokens.size() / size_t(page_size_); ++i) {
        const auto it = entries_.find(key(ns, parent, tokens, i));
        if (it == entries_.end()) break;
        pages.push_back(it->second);
        parent = it->second;
    }
    return pages;
}

int32_t OwnershipModel::expected_partial(uint64_t ns, const std::vector<int32_t>& matched,
                                         std::span<const int32_t> rest, int32_t page) const {
    const int32_t parent = matched.empty() ? -1 : matched.back();
    std::vector<std::pair<int32_t, int32_t>> shared;  // page, leading tokens in common
    for (auto it = entries_.lower_bound(Key{ns, parent, {}});
         it != entries_.end() && std::get<0>(it->first) == ns && std::get<1>(it->first) == parent; ++it) {
        const auto& chunk = std::get<2>(it->first);  // a tail's is shorter than a page
        int32_t len = 0;
        while (size_t(len) < rest.size() && size_t(len) < chunk.size() && chunk[size_t(len)] == rest[size_t(len)])
            ++len;
        shared.emplace_back(it->second, len);
    }
    int32_t best = 0;
    for (const auto& [p, len] : shared) best = std::max(best, len);
    if (best == page_size_) fail("a whole page after the match was left unmatched");
    if (best > 0 && std::find(shared.begin(), shared.end(), std::pair{page, best}) == shared.end())
        fail("partial page " + std::to_string(page) + " is not one sharing the most tokens");
    return best;
}

std::vector<std::map<OwnershipModel::Key, int32_t>::iterator> OwnershipModel::place(uint64_t ns, int32_t parent) {
    std::vector<std::map<Key, int32_t>::iterator> out;
    for (auto it = entries_.lower_bound(Key{ns, parent, {}});
         it != entries_.end() && std::get<0>(it->first) == ns && std::get<1>(it->first) == parent; ++it)
        out.push_back(it);
    return out;
}

void OwnershipModel::add_entry(Key k, int32_t page, int32_t parent) {
    if (cached_[size_t(page)].cached) fail("page " + std::to_string(page) + " offered for a second prefix");
    const auto it = entries_.emplace(std::move(k), page).first;
    cached_[size_t(page)] = Cached{true, parent, it};
    add(page, kCache);
}

void OwnershipModel::drop_tails_below(uint64_t ns, int32_t parent, const std::vector<int32_t>& tokens,
                                      int32_t new_page) {
    for (const auto it : place(ns, parent)) {
        const auto& chunk = std::get<2>(it->first);
        if (chunk.size() >= size_t(page_size_) || chunk.size() >= tokens.size() ||
            !std::equal(chunk.begin(), chunk.end(), tokens.begin()))
            continue;
        const int32_t page = it->second;
        ++tails_replaced_;
        tails_refilled_ += page == new_page;
        remove(page, kCache);
        cached_[size_t(page)] = Cached{};
        entries_.erase(it);
    }
}

int32_t OwnershipModel::apply_insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> pages,
                                     bool partial_tail) {
    size_t n = pages.size();
    const size_t tail = partial_tail ? tokens.size() % size_t(page_size_) : 0;
    if (tail > 0) --n;
    int32_t added = 0;
    int32_t parent = -1;
    for (size_t i = 0; i < n; ++i) {
        auto k = key(ns, parent, tokens, i);
        if (const auto it = entries_.find(k); it != entries_.end()) {
            parent = it->second;
            continue;
        }
        drop_tails_below(ns, parent, std::get<2>(k), pages[i]);
        add_entry(std::move(k), pages[i], parent);
        ++added;
        parent = pages[i];
    }
    if (tail == 0) return added;
    const std::vector<int32_t> rest(tokens.end() - std::ptrdiff_t(tail), tokens.end());
    for (const auto it : place(ns, parent)) {
        const auto& chunk = std::get<2>(it->first);
        if (chunk.size() >= rest.size() && std::equal(rest.begin(), rest.end(), chunk.begin())) return added;
    }
    drop_tails_below(ns, parent, rest, pages[n]);
    add_entry(Key{ns, parent, rest}, pages[n], parent);
    return added + 1;
}

bool OwnershipModel::is_tail(int32_t page) const {
    const Cached& c = cached_[size_t(page)];
    return c.cached && std::get<2>(c.entry->first).size() < size_t(page_size_);
}

void OwnershipModel::apply_evictions(const PagePool& pool, int32_t evicted) {
    int32_t gone = 0;
    for (size_t page = 0; page < cached_.size(); ++page) {
        if (!cached_[page].cached || pool.refcount(int32_t(page)) != 0) continue;
        if (owners_[page].size() != 1)
            fail("evicted page " + std::to_string(page) + " had " + std::to_string(owners_[page].size()) + " owners");
        remove(int32_t(page), kCache);
        entries_.erase(cached_[page].entry);
        cached_[page] = Cached{};
        ++gone;
    }
    if (gone != evicted)
        fail("evict reported " + std::to_string(evicted) + " pages, " + std::to_string(gone) + " became free");
    for (size_t page = 0; page < cached_.size(); ++page) {
        const int32_t parent = cached_[page].parent;
        if (cached_[page].cached && parent >= 0 && !cached_[size_t(parent)].cached)
            fail("page " + std::to_string(page) + " stayed cached after its parent page " + std::to_string(parent) +
                 " was evicted");
    }
}

void OwnershipModel::apply_clear() {
    for (size_t page = 0; page < cached_.size(); ++page)
        if (cached_[page].cached) remove(int32_t(page), kCache);
    entries_.clear();
    std::fill(cached_.begin(), cached_.end(), Cached{});
}

int32_t OwnershipModel::expected_evictable() const {
    std::vector<uint8_t> blocked(cached_.size(), 0);
    for (size_t page = 0; page < cached_.size(); ++page) {
        if (!cached_[page].cached || owners_[page].size() == 1) continue;
        blocked[page] = 1;
        for (int32_t up = cached_[page].parent; up >= 0 && !blocked[size_t(up)]; up = cached_[size_t(up)].parent)
            blocked[size_t(up)] = 1;
    }
    int32_t n = 0;
    for (size_t page = 0; page < cached_.size(); ++page) n += cached_[page].cached && !blocked[page];
    return n;
}

void OwnershipModel::check(const PagePool& pool, const RadixCache& cache) const {
    int32_t used = 0;
    for (size_t page = 0; page < owners_.size(); ++page) {
        const int32_t expect = int32_t(owners_[page].size());
        const int32_t got = pool.refcount(int32_t(page));
        if (got != expect)
            fail("page " + std::to_string(page) + " has refcount " + std::to_string(got) + " but " +
                 std::to_string(expect) + " owners");
        used += expect > 0;
    }
    if (pool.used_count() != used || pool.free_count() != pool.capacity() - used)
        fail("pool reports " + std::to_string(pool.used_count()) + " used / " + std::to_string(pool.free_count()) +
             " free, owners say " + std::to_string(used) + " used");
    if (cache.cached_pages() != cached_count())
        fail("cache holds " + std::to_string(cache.cached_pages()) + " pages, model " + std::to_string(cached_count()));
    const int32_t evictable = expected_evictable();
    if (cache.evictable_pages() != evictable)
        fail("cache reports " + std::to_string(cache.evictable_pages()) + " evictable pages, model " +
             std::to_string(evictable));
}

} // namespace arbor::kv::test
