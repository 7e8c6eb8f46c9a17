// Token-id and page helpers shared by the radix cache tests.
#pragma once

#include "kv/page_pool.h"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace arbor::kv::test {

using Ids = std::vector<int32_t>;

constexpr int32_t P = 4;  // page size of the tests
constexpr uint64_t kModelA = 11, kModelB = 22;

// n consecutive token ids from `first`.
inline Ids run(int32_t first, int32_t n) {
    Ids t(static_cast<size_t>(n), 0);
    std::iota(t.begin(), t.end(), first);
    return t;
}

inline Ids cat(Ids a, const Ids& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Fresh pages a caller "computed" for n_pages whole pages.
inline Ids compute(PagePool& pool, int32_t n_pages) {
    Ids pages;
    for (int32_t i = 0; i < n_pages; ++i) pages.push_back(*pool.allocate());
    return pages;
}

inline void release_all(PagePool& pool, Ids& pages) {
    for (const int32_t p : pages) pool.release(p);
    pages.clear();
}

inline Ids slice(const Ids& v, size_t from, size_t n) {
    return Ids(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(from + n));
}

} // namespace arbor::kv::test
