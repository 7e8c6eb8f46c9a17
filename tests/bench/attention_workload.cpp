// arbor-bench --workload attention: one decode row's paged attention alone (the CPU
// backend's CpuAttention), over every layer of the model's shape, after each of --depth's
// context lengths of random K/V stored in real KV pages scattered over the pool (as a
// long-lived cache leaves them). Reports the time per token and the GB/s of K/V read,
// to compare with --workload memread: a context larger than the caches streams from
// memory, so at memory speed decode at depth costs weights + K/V bytes over the bandwidth.
// Also the least CPU time of a pass (all threads, their waits included): on a machine
// shared with other jobs a pass's wall time is mostly the scheduler's, its CPU time not.
#include "workloads.h"

#include "bench_report.h"
#include "best_rate.h"

#include "arbor/kernels/thread_pool.h"
#include "model/cpu_attention.h"

#include <algorithm>
#include <ctime>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace arbor::bench {
namespace {

double process_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

} // namespace

WorkloadResult run_attention(const Model& model, const EngineOptions& options, const std::vector<int>& depths) {
    const ModelConfig& cfg = model.config();
    ThreadPool pool(std::max(1, options.backend.threads));
    WorkloadResult out{"| depth | threads | us/token | CPU us/token | K/V MB | GB/s |\n|---|---|---|---|---|---|\n", "["};
    bool first = true;
    for (const int depth : depths) {
        BackendOptions bo = options.backend;
        bo.kv_tokens = depth + 1;
        KvPages kv(cfg, bo);
        // The row's pages in a random order of the pool's.
        std::mt19937 rng(7);
        std::vector<int32_t> table(size_t(kv.page_count()));
        std::iota(table.begin(), table.end(), 0);
        std::shuffle(table.begin(), table.end(), rng);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        std::vector<float> k(size_t(cfg.kv_dim())), v(size_t(cfg.kv_dim()));
        for (int32_t layer = 0; layer < cfg.n_layer; ++layer)
            for (int32_t pos = 0; pos <= depth; ++pos) {
                for (float& x : k) x = uniform(rng);
                for (float& x : v) x = uniform(rng);
                kv.store(layer, table, pos, k.data(), v.data());
            }
        ForwardBatch batch;
        batch.tokens = {0};
        batch.sequences.push_back({0, 1, depth, table});
        const int32_t row_pos[] = {depth};
        std::vector<float> q(size_t(cfg.n_head) * size_t(cfg.head_dim)), o(q.size());
        for (float& x : q) x = uniform(rng);
        CpuAttention attention(cfg, kv, pool, bo.attention_part);
        // A step plans once and runs every layer.
        double least_cpu = 1e30;
        auto pass = [&] {
            const double cpu = process_cpu_seconds();
            attention.plan(batch, row_pos);
            for (int32_t layer = 0; layer < cfg.n_layer; ++layer) attention.run(batch, layer, q.data(), o.data());
            least_cpu = std::min(least_cpu, process_cpu_seconds() - cpu);
        };
        pass();
        const double per_second = best_passes_per_second(pass, 0.1);
        const double element_bytes = kv.type() == KvType::F32 ? 4.0 : kv.type() == KvType::F16 ? 2.0 : 34.0 / 32.0;
        const double bytes = 2.0 * double(depth + 1) * double(cfg.n_layer) * double(cfg.kv_dim()) * element_bytes;
        out.table += "| " + std::to_string(depth) + " | " + std::to_string(pool.size()) + " | " +
                     fmt("%.0f", 1e6 / per_second) + " | " + fmt("%.0f", 1e6 * least_cpu) + " | " +
                     fmt("%.1f", bytes / 1e6) + " | " +
                     fmt("%.2f", bytes * per_second / 1e9) + " |\n";
        out.json += std::string(first ? "" : ", ") + "{\"depth\": " + std::to_string(depth) +
                    ", \"us_per_token\": " + fmt("%.1f", 1e6 / per_second) + ", \"cpu_us_per_token\": " +
                    fmt("%.1f", 1e6 * least_cpu) + ", \"kv_bytes\": " +
                    fmt("%.0f", bytes) + ", \"gb_per_s\": " + fmt("%.3f", bytes * per_second / 1e9) + "}";
        first = false;
    }
    out.json += "]";
    return out;
}

} // namespace arbor::bench
