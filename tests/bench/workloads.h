// Workloads of arbor-bench (--workload NAME): serving workloads run through the real
// Engine, and the matrix product alone.
#pragma once

#include "arbor/engine.h"
#include "arbor/model.h"

#include <string>
#include <vector>

namespace arbor::bench {

struct WorkloadResult {
    std::string table;  // human-readable
    std::string json;   // one JSON object
};

// N simultaneous chats for each N in `chats`, each generating 128 tokens; `rounds`
// rounds over all counts, medians reported.
WorkloadResult run_concurrent(const Model& model, const EngineOptions& options, const std::vector<int>& chats,
                              int rounds);
// 16 conversations x 6 turns, round-robin; `passes` passes, each on a fresh engine.
WorkloadResult run_multiturn(const Model& model, const EngineOptions& options, int passes);
// 32 requests sharing a 1,000-token system prompt.
WorkloadResult run_shared_prefix(const Model& model, const EngineOptions& options);
// Follow-up time to first token after conversations of each length: hot, after a restart
// with the disk tier, after a restart without it (restart_workload.cpp).
WorkloadResult run_restart(const Model& model, const EngineOptions& options, const std::vector<int>& lengths,
                           int repetitions);
// The float-activation matmul on the model's weights, 1 to 64 activation rows (GMAC/s).
WorkloadResult run_matmul(const Model& model, const EngineOptions& options, const std::vector<int>& activation_rows);
// One decode row's paged attention alone over every layer, after each context length in
// `depths` (microseconds per token, GB/s of K/V read).
WorkloadResult run_attention(const Model& model, const EngineOptions& options, const std::vector<int>& depths);
// Plain reads of a buffer larger than the caches with `threads` threads (GB/s): the
// memory speed that the matmul workload's GB/s of one or a few rows approach.
WorkloadResult run_memread(int threads);

} // namespace arbor::bench
