// arbor-bench --workload matmul: the float-activation matrix product alone, on the
// model's own weights (layer 0's FFN gate and down, and the output projection), for
// batches of 1 to 64 activation rows. Reports GMAC/s, so kernel changes can be compared
// directly.
#include "workloads.h"

#include "bench_report.h"

#include "arbor/kernels/matmul.h"
#include "arbor/kernels/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace arbor::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Multiply-accumulates per second: the best of ten rounds of repeated products, each at
// least 50 ms (the best round is the one least disturbed by other work on the machine).
double gmacs(ThreadPool& pool, const TensorView& w, int64_t rows) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    AlignedFloats x(size_t(rows * w.cols));  // like the engine's activations
    std::vector<float> y(size_t(rows * w.rows));
    for (auto& v : x) v = normal(rng);
    MatmulScratch scratch;
    const MatmulOutput out{w, y.data(), w.rows, nullptr};
    matmul(pool, x.data(), rows, std::span(&out, 1), scratch);  // warm-up: pages the weights in
    double best = 0.0;
    for (int round = 0; round < 10; ++round) {
        int reps = 0;
        const auto start = Clock::now();
        double seconds = 0.0;
        do {
            matmul(pool, x.data(), rows, std::span(&out, 1), scratch);
            ++reps;
            seconds = std::chrono::duration<double>(Clock::now() - start).count();
        } while (seconds < 0.05);
        best = std::max(best, double(w.rows) * double(w.cols) * double(rows) * reps / seconds / 1e9);
    }
    return best;
}

} // namespace

WorkloadResult run_matmul(const Model& model, const EngineOptions& options) {
    ThreadPool pool(options.backend.threads > 0 ? options.backend.threads : 1);
    const struct {
        const char* name;
        TensorView weight;
    } tensors[] = {{"ffn_gate.0", model.weights().layers.at(0).w_gate},
                   {"ffn_down.0", model.weights().layers.at(0).w_down},
                   {"output", model.weights().output}};
    WorkloadResult out{"| tensor | type | rows x cols | activation rows | GMAC/s |\n|---|---|---|---|---|\n", "["};
    bool first = true;
    for (const auto& t : tensors) {
        const std::string type(dtype_name(t.weight.type));
        for (int rows : {1, 2, 3, 4, 8, 16, 32, 64}) {
            const double rate = gmacs(pool, t.weight, rows);
            out.table += std::string("| ") + t.name + " | " + type + " | " + std::to_string(t.weight.rows) + " x " +
                         std::to_string(t.weight.cols) + " | " + std::to_string(rows) + " | " + fmt("%.2f", rate) +
                         " |\n";
            out.json += std::string(first ? "" : ", ") + "{\"tensor\": \"" + t.name + "\", \"type\": \"" + type +
                        "\", \"activation_rows\": " + std::to_string(rows) + ", \"gmac_per_s\": " + fmt("%.3f", rate) +
                        "}";
            first = false;
        }
    }
    out.json += "]";
    return out;
}

} // namespace arbor::bench
