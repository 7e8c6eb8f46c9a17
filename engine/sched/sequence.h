// The scheduler's view of one request: its tokens and where their KV lives.
#pragma once

#include "arbor/priority.h"
#include "kv/block_table.h"

#include <cstdint>
#include <vector>

namespace arbor::sched {

struct Sequence {
    uint64_t id = 0;
    uint64_t arrival = 0;           // submission order: lower is older
    std::vector<int32_t> tokens;    // prompt, then the generated ids
    int32_t prompt_len = 0;
    // Prefix-cache scope (Request::cache_namespace): pages are shared only between
    // sequences of one namespace.
    uint64_t cache_namespace = 0;
    // Invariant: the KV of tokens[0 .. computed) is in table.pages, page i holding
    // positions [i*P, (i+1)*P); table.pages covers at least `computed` positions.
    int32_t computed = 0;
    kv::BlockTable table;
    int32_t cached_pages = 0;       // leading pages already offered to the prefix cache
    int32_t cached_prompt_tokens = -1;  // prompt tokens found in the cache (memory or disk) at first admission
    int32_t disk_prompt_tokens = 0;     // of those, the ones read from the disk tier
    // Pages being read from the disk tier into table.pages[load_from .. load_from+loading):
    // while loading > 0 the sequence holds its pages but runs no rows. load_ticket names
    // the load (a new one for every load, so results of an abandoned load are ignored).
    int32_t loading = 0;
    int32_t load_from = 0;
    uint64_t load_ticket = 0;
    // A warm-up: its prompt is computed and nothing is generated.
    bool prefill_only = false;
    // Which prefill rows go first and who may take whose place (arbor/priority.h).
    Priority priority = Priority::Normal;
    bool running = false;
    uint64_t queued_at_step = 0;    // when it (re)entered the waiting queue
    int32_t preemptions = 0;

    int32_t pending() const { return int32_t(tokens.size()) - computed; }
};

// Rows of one sequence in the next step: tokens[start .. start+count), computed into
// positions start.. ; `sample` when the last row is the sequence's last known token.
struct StepItem {
    Sequence* seq = nullptr;
    int32_t start = 0;
    int32_t count = 0;
    bool sample = false;
};

} // namespace arbor::sched
