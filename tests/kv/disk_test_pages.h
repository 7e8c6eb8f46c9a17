// Page contents for the disk tier tests: bytes that depend on the page's key alone, so a
// page read back can be checked bit for bit without keeping what was written.
#pragma once

#include "kv/page_key.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace arbor::kv::test {

inline std::vector<std::byte> page_bytes_for(const PageKey& key, size_t n) {
    std::vector<std::byte> out(n);
    uint64_t s = key.hi ^ (key.lo * 0x9e3779b97f4a7c15ull);
    for (size_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        out[i] = std::byte(s >> 56);
    }
    return out;
}

inline std::vector<int32_t> tokens_for(int i, int32_t page_size) {
    std::vector<int32_t> t(static_cast<size_t>(page_size));
    for (int32_t j = 0; j < page_size; ++j) t[size_t(j)] = i * 131 + j;
    return t;
}

} // namespace arbor::kv::test
