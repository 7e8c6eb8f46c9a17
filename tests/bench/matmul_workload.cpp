// arbor-bench --workload matmul: the default matrix product (matmul's Float mode) alone,
// on the model's own weights (layer 0's FFN gate and down, the output projection, and
// every layer's products in turn, which stream from memory as in a step), for batches of
// 1 to 64 activation rows (or those --rows names), through panels with 16-bit activations (the backend's
// default) or in GGUF order with float products (--weights gguf). Reports GMAC/s, so
// kernel changes can be compared directly, and the GB/s of weights read (panels or GGUF
// rows, as used), to compare with --workload memread.
#include "workloads.h"

#include "bench_report.h"
#include "best_rate.h"

#include "arbor/kernels/matmul.h"
#include "arbor/kernels/thread_pool.h"

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

namespace arbor::bench {
namespace {

// One matmul call: weights sharing their input, as the engine fuses Q/K/V and gate/up.
using Call = std::vector<TensorView>;

// Panel copies of the packable weights, by the weight's data; empty for GGUF order.
using Panels = std::map<const uint8_t*, PanelWeights>;

struct Rate {
    double gmacs, gbps;  // multiply-accumulates and weight bytes read, per second
};

// Rates of `calls` in turn (best_passes_per_second, rounds of at least 50 ms).
Rate rate(ThreadPool& pool, const std::vector<Call>& calls, const Panels& panels, int64_t rows) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    int64_t cols = 0, outs = 0;
    double macs = 0.0, bytes = 0.0;
    for (const Call& call : calls)
        for (const TensorView& w : call) {
            cols = std::max(cols, w.cols);
            outs = std::max(outs, w.rows);
            macs += double(w.rows) * double(w.cols) * double(rows);
            const auto it = panels.find(w.data);
            bytes += it != panels.end() ? double(it->second.panel_bytes()) * double(it->second.panels())
                                        : double(w.rows) * double(w.row_stride);
        }
    AlignedFloats x(size_t(rows * cols));  // like the engine's activations
    std::vector<std::vector<float>> y(3, std::vector<float>(size_t(rows * outs)));
    for (auto& v : x) v = normal(rng);
    std::vector<std::vector<MatmulOutput>> outputs(calls.size());
    for (size_t c = 0; c < calls.size(); ++c)
        for (size_t i = 0; i < calls[c].size(); ++i) {
            const auto it = panels.find(calls[c][i].data);
            outputs[c].push_back(
                {calls[c][i], y[i].data(), calls[c][i].rows, nullptr, it == panels.end() ? nullptr : &it->second});
        }
    MatmulScratch scratch;
    auto pass = [&] {
        for (const auto& call : outputs) matmul(pool, x.data(), rows, call, scratch);
    };
    pass();  // warm-up: pages the weights in
    const double per_second = best_passes_per_second(pass, 0.05);
    return {macs * per_second / 1e9, bytes * per_second / 1e9};
}

} // namespace

WorkloadResult run_matmul(const Model& model, const EngineOptions& options, const std::vector<int>& activation_rows) {
    ThreadPool pool(options.backend.threads > 0 ? options.backend.threads : 1);
    const ModelWeights& mw = model.weights();
    std::vector<Call> layers;  // every layer's calls in a step's order
    for (const auto& l : mw.layers)
        for (Call call : {Call{l.wq, l.wk, l.wv}, Call{l.wo}, Call{l.w_gate, l.w_up}, Call{l.w_down}})
            layers.push_back(std::move(call));
    const struct {
        const char* name;
        std::vector<Call> calls;
    } tensors[] = {{"ffn_gate.0", {{mw.layers.at(0).w_gate}}},
                   {"ffn_down.0", {{mw.layers.at(0).w_down}}},
                   {"output", {{mw.output}}},
                   {"all layers", layers}};
    // As in the backend: every packable matrix in one buffer of huge pages.
    std::vector<const TensorView*> todo;
    if (options.backend.panel_weights) {
        for (const auto& call : layers)
            for (const TensorView& w : call) todo.push_back(&w);
        todo.push_back(&mw.output);
    }
    std::vector<size_t> offsets;
    const auto storage = PanelWeights::storage_for(todo, offsets);
    Panels panels;
    for (size_t i = 0; i < todo.size(); ++i) {
        if (offsets[i] == SIZE_MAX) continue;
        try {
            panels.emplace(todo[i]->data, PanelWeights::pack(*todo[i], storage, offsets[i]));
        } catch (const std::invalid_argument&) {
            // As in the backend: a matrix whose scales cannot be packed keeps the GGUF order.
        }
    }
    WorkloadResult out{"| tensor | type | rows x cols | activation rows | GMAC/s | weight GB/s |\n|---|---|---|---|---|---|\n",
                       "["};
    bool first = true;
    for (const auto& t : tensors) {
        const TensorView& w = t.calls.front().front();
        const std::string type(dtype_name(w.type));
        const std::string shape = t.calls.size() > 1 ? std::to_string(t.calls.size()) + " calls"
                                                     : std::to_string(w.rows) + " x " + std::to_string(w.cols);
        for (int rows : activation_rows) {
            const Rate r = rate(pool, t.calls, panels, rows);
            out.table += std::string("| ") + t.name + " | " + type + " | " + shape + " | " + std::to_string(rows) +
                         " | " + fmt("%.2f", r.gmacs) + " | " + fmt("%.2f", r.gbps) + " |\n";
            out.json += std::string(first ? "" : ", ") + "{\"tensor\": \"" + t.name + "\", \"type\": \"" + type +
                        "\", \"activation_rows\": " + std::to_string(rows) + ", \"gmac_per_s\": " +
                        fmt("%.3f", r.gmacs) + ", \"weight_gb_per_s\": " + fmt("%.3f", r.gbps) + "}";
            first = false;
        }
    }
    out.json += "]";
    return out;
}

} // namespace arbor::bench
