// A sequence's KV pages in position order: pages[i] holds positions [i*P, (i+1)*P)
// for page size P. The ids are references the sequence holds in the PagePool.
#pragma once

#include "arbor/error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace arbor::kv {

struct BlockTable {
    std::vector<int32_t> pages;

    // Pages needed to hold n_tokens positions (ceil). Throws arbor::Error for a page
    // size below 1 or a negative token count.
    static int32_t pages_for(int32_t n_tokens, int32_t page_size) {
        if (page_size < 1) throw Error("KV page size must be positive, got " + std::to_string(page_size));
        if (n_tokens < 0) throw Error("token count must not be negative, got " + std::to_string(n_tokens));
        return int32_t((int64_t(n_tokens) + page_size - 1) / page_size);
    }
    // Positions the table can hold without another page.
    int32_t token_capacity(int32_t page_size) const { return int32_t(pages.size()) * page_size; }
};

} // namespace arbor::kv
