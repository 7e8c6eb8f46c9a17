// arbor-bench: by default measures prefill (a prompt of --prompt-tokens, default 512) and
// decode (--gen-tokens single-token steps, default 128, after --depth tokens of context)
// throughput of one sequence through the engine, like llama-bench's pp512 and tg128 (and
// its -d). Several depths (--depth 0,1024,4096) share one context, prefilled once: each
// round decodes at every depth in turn, so a busy machine's swings reach all depths alike.
// --workload concurrent|multiturn|shared-prefix|restart runs the serving workloads through
// the engine instead, --workload matmul the matrix product alone, --workload attention
// one decode row's attention alone at each --depth, --workload memread the
// machine's plain memory-read speed (workloads.h). Every result names the CPU and its
// vector extensions (cpu_info.h).
// --synthetic SHAPE:TYPE[:ARCH] benchmarks a synthetic model (synthetic_cache.h) instead of --model.
#include "bench_report.h"
#include "cpu_info.h"
#include "synthetic_cache.h"
#include "workloads.h"

#include "arbor/error.h"
#include "arbor/engine.h"
#include "arbor/generator.h"
#include "arbor/kernels/quant.h"
#include "arbor/model.h"
#include "arbor/paths.h"

#include <cctype>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

namespace {

struct Options {
    std::string model = arbor::default_model_path().string();
    std::string synthetic;         // SHAPE:TYPE[:ARCH], replaces model
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    int prompt_tokens = 512;
    int gen_tokens = 128;
    std::vector<int> depths = {0};  // context before the decode steps, ascending
    int attention_part = -1;       // -1: the backend's default
    int repetitions = 3;
    bool json = false;
    bool int8 = false;
    arbor::KvType kv_type = arbor::BackendOptions{}.kv_type;
    bool panel_weights = arbor::BackendOptions{}.panel_weights;
    std::string workload = "single";
    std::string device = "auto";   // BackendOptions::device
    int kv_mib = 2048;
    // Serving workloads' KV disk tier (0: off, the default, so that a run never reads what
    // an earlier run left; the restart workload uses a temporary directory of its own).
    int kv_disk_mib = 0;
    std::string kv_disk_dir;       // empty: arbor::kv_disk_dir()
    std::vector<int> chats = {1, 4, 8, 16};  // concurrent workload only
    std::vector<int> lengths = {1024, 4096, 16384};  // restart workload only
    std::vector<int> rows = {1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64};  // matmul workload only
};

// ", F16 KV" etc., for the report's backend line.
std::string kv_label(arbor::KvType type) {
    std::string name = arbor::kv_type_name(type);
    for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
    return ", " + name + " KV";
}

void usage() {
    std::fputs("usage: arbor-bench [--model PATH | --synthetic SHAPE:TYPE[:ARCH]] [--threads N]\n"
               "                   [--prompt-tokens N] [--gen-tokens N] [--depth N[,N...]] [--attention-part N]\n"
               "                   [--repetitions N] [--int8-activations] [--json]\n"
               "                   [--workload single|concurrent|multiturn|shared-prefix|restart|matmul|attention|memread]\n"
               "                   [--kv-mib N] [--kv-disk-mib N] [--kv-disk-dir DIR] [--lengths N[,N...]]\n"
               "                   [--rows N[,N...] (matmul: activation rows)]\n"
               "                   [--chats N[,N...]] [--kv-type f16|f32|q8_0]\n"
               "                   [--weights panels|gguf] [--device auto|cpu|cuda[:N]]\n",
               stderr);
}

// "1,4,8": counts from `least` up to `most`, comma-separated.
bool parse_counts(const std::string& text, std::vector<int>& out, long most = 256, long least = 1) {
    out.clear();
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v < least || v > most) return false;
        out.push_back(int(v));
        start = comma + 1;
    }
    return !out.empty();
}

bool parse(int argc, char** argv, Options& o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next_int = [&](int& out, long least = 1) {
            if (i + 1 >= argc) return false;
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < least || v > 1000000) return false;
            out = int(v);
            return true;
        };
        if (a == "--json") o.json = true;
        else if (a == "--int8-activations") o.int8 = true;
        else if (a == "--model" && i + 1 < argc) o.model = argv[++i];
        else if (a == "--synthetic" && i + 1 < argc) o.synthetic = argv[++i];
        else if (a == "--workload" && i + 1 < argc) o.workload = argv[++i];
        else if (a == "--device" && i + 1 < argc) o.device = argv[++i];
        else if (a == "--kv-type" && i + 1 < argc) {
            const auto t = arbor::kv_type_from_name(argv[++i]);
            if (!t) return false;
            o.kv_type = *t;
        }
        else if (a == "--weights" && i + 1 < argc) {
            const std::string t = argv[++i];
            if (t != "panels" && t != "gguf") return false;
            o.panel_weights = t == "panels";
        }
        else if (a == "--kv-mib") { if (!next_int(o.kv_mib)) return false; }
        else if (a == "--kv-disk-mib") { if (!next_int(o.kv_disk_mib, 0)) return false; }
        else if (a == "--kv-disk-dir" && i + 1 < argc) o.kv_disk_dir = argv[++i];
        else if (a == "--lengths" && i + 1 < argc) { if (!parse_counts(argv[++i], o.lengths, 1 << 20)) return false; }
        else if (a == "--chats" && i + 1 < argc) { if (!parse_counts(argv[++i], o.chats)) return false; }
        else if (a == "--rows" && i + 1 < argc) { if (!parse_counts(argv[++i], o.rows, 4096)) return false; }
        else if (a == "--threads" || a == "-t") { if (!next_int(o.threads)) return false; }
        else if (a == "--prompt-tokens") { if (!next_int(o.prompt_tokens)) return false; }
        else if (a == "--gen-tokens") { if (!next_int(o.gen_tokens)) return false; }
        else if (a == "--depth" && i + 1 < argc) {
            if (!parse_counts(argv[++i], o.depths, 1000000, 0)) return false;
            std::sort(o.depths.begin(), o.depths.end());
        }
        else if (a == "--attention-part") { if (!next_int(o.attention_part, 0)) return false; }
        else if (a == "--repetitions" || a == "-r") { if (!next_int(o.repetitions)) return false; }
        else return false;
    }
    return true;
}

arbor::bench::Measurement summarize(std::string test, int threads, std::vector<double> runs) {
    arbor::bench::Measurement m{std::move(test), threads, 0.0, 0.0, std::move(runs)};
    for (double r : m.runs_tps) m.mean_tps += r;
    m.mean_tps /= double(m.runs_tps.size());
    for (double r : m.runs_tps) m.stddev_tps += (r - m.mean_tps) * (r - m.mean_tps);
    m.stddev_tps = m.runs_tps.size() > 1 ? std::sqrt(m.stddev_tps / double(m.runs_tps.size() - 1)) : 0.0;
    return m;
}

void print_workload(const Options& o, const std::string& model, const arbor::bench::WorkloadResult& r) {
    const std::string cpu = arbor::bench::cpu_description();
    if (o.json)
        std::printf("{\"model\": %s, \"workload\": \"%s\", \"threads\": %d, \"cpu\": %s, \"results\": %s}\n",
                    arbor::bench::json_quoted(model).c_str(), o.workload.c_str(), o.threads,
                    arbor::bench::json_quoted(cpu).c_str(), r.json.c_str());
    else
        std::printf("model: %s\nworkload: %s, %d threads\ncpu: %s\n\n%s", model.c_str(), o.workload.c_str(), o.threads,
                    cpu.c_str(), r.table.c_str());
}

int run_workload(const Options& o, const arbor::Model& model) {
    arbor::EngineOptions eo;
    eo.backend.threads = o.threads;
    eo.backend.device = o.device;
    eo.backend.int8_activations = o.int8;
    eo.backend.kv_type = o.kv_type;
    eo.backend.panel_weights = o.panel_weights;
    if (o.attention_part >= 0) eo.backend.attention_part = o.attention_part;
    eo.backend.kv_budget_bytes = size_t(o.kv_mib) << 20;
    eo.kv_disk_bytes = uint64_t(o.kv_disk_mib) << 20;
    eo.kv_disk_dir = o.kv_disk_dir;
    arbor::bench::WorkloadResult r;
    if (o.workload == "concurrent") r = arbor::bench::run_concurrent(model, eo, o.chats, o.repetitions);
    else if (o.workload == "multiturn") r = arbor::bench::run_multiturn(model, eo, o.repetitions);
    else if (o.workload == "shared-prefix") r = arbor::bench::run_shared_prefix(model, eo);
    else if (o.workload == "restart") r = arbor::bench::run_restart(model, eo, o.lengths, o.repetitions);
    else if (o.workload == "matmul") r = arbor::bench::run_matmul(model, eo, o.rows);
    else if (o.workload == "attention")
        r = arbor::bench::run_attention(model, eo, o.depths == std::vector<int>{0} ? std::vector<int>{0, 1024, 2048, 4096}
                                                                                 : o.depths);
    else {
        std::fprintf(stderr, "arbor-bench: unknown workload '%s'\n", o.workload.c_str());
        return 2;
    }
    print_workload(o, std::filesystem::path(o.model).filename().string(), r);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse(argc, argv, o)) {
        usage();
        return 2;
    }
    spdlog::set_level(spdlog::level::warn);
    if (o.workload == "memread") {  // no model
        print_workload(o, "none", arbor::bench::run_memread(o.threads));
        return 0;
    }
    if (!o.synthetic.empty()) {
        try {
            o.model = arbor::synth::cached_synthetic_model(o.synthetic, [](const std::filesystem::path& path) {
                std::fprintf(stderr, "arbor-bench: writing %s\n", path.string().c_str());
            }).string();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "arbor-bench: error: %s\n", e.what());
            return 1;
        }
    }
    try {
        const auto opened = std::chrono::steady_clock::now();
        auto model = arbor::Model::load(o.model);
        if (o.workload != "single") return run_workload(o, *model);
        // One sequence through the engine (the serving path every tool uses): prefill is
        // the prompt's tokens over its time to first token, in one chunk; decode the ids
        // after the first over the time between the first and the last.
        arbor::EngineOptions eo;
        arbor::BackendOptions& bo = eo.backend;
        bo.threads = o.threads;
        bo.device = o.device;
        bo.int8_activations = o.int8;
        bo.kv_type = o.kv_type;
        bo.panel_weights = o.panel_weights;
        if (o.attention_part >= 0) bo.attention_part = o.attention_part;
        const int deepest = o.depths.back();
        // The shared context plus each decode's tokens, which stay cached until evicted.
        bo.kv_tokens = std::max(o.prompt_tokens, deepest) +
                       (o.gen_tokens + 1) * (o.repetitions * int(o.depths.size()) + 1) + 64;
        eo.max_batch_tokens = std::max(o.prompt_tokens, 1);
        eo.context_tokens = std::max(o.prompt_tokens, deepest) + o.gen_tokens + 16;
        arbor::Engine engine(*model, eo);
        if (!engine.device_fallback().empty())
            std::fprintf(stderr, "arbor-bench: no GPU used: %s\n", engine.device_fallback().c_str());

        // Random ids like llama-bench: the content does not change the work done.
        std::mt19937 rng(1234);
        std::uniform_int_distribution<int32_t> pick(0, model->config().n_vocab - 1);
        std::vector<arbor::TokenId> prompt(size_t(o.prompt_tokens));
        for (auto& id : prompt) id = pick(rng);
        std::vector<arbor::TokenId> context(size_t(std::max(deepest, 1)));
        for (auto& id : context) id = pick(rng);
        // Prefill runs each in a cache namespace of its own: nothing they compute is found
        // cached. Decode runs share one, so a depth's context is computed once (its prefill
        // is not timed: decode speed counts from the first generated token on).
        uint64_t next_namespace = 2;
        constexpr uint64_t kContextNamespace = 1;
        auto run = [&](std::vector<arbor::TokenId> ids, int tokens, uint64_t cache_namespace) {
            arbor::Request request;
            request.prompt = std::move(ids);
            request.options.sampler.temperature = 0.0f;
            request.options.max_tokens = tokens;
            request.options.stop_at_end_of_generation = false;
            request.cache_namespace = cache_namespace;
            const auto result = arbor::generate(engine, std::move(request));
            if (result.finish == arbor::FinishReason::Error) throw arbor::Error(result.error);
            return result.stats;
        };
        auto context_of = [&](int depth) {
            return std::vector<arbor::TokenId>(context.begin(), context.begin() + std::max(depth, 1));
        };

        // The first token of a one-token prompt ends the load time.
        run({pick(rng)}, 1, next_namespace++);
        arbor::bench::Footprint footprint;
        footprint.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - opened).count();
        // Warm-up: pages in the weights (and on a GPU, loads the prompt path's kernels).
        run(prompt, 1, next_namespace++);
        for (int depth : o.depths) run(context_of(depth), 1, kContextNamespace);
        std::vector<double> pp;
        std::vector<std::vector<double>> tg(o.depths.size());
        for (int r = 0; r < o.repetitions; ++r) {
            pp.push_back(o.prompt_tokens / (run(prompt, 1, next_namespace++).time_to_first_token_ms / 1000.0));
            for (size_t d = 0; d < o.depths.size(); ++d)
                tg[d].push_back(
                    run(context_of(o.depths[d]), o.gen_tokens + 1, kContextNamespace).decode_tokens_per_second);
        }
        arbor::bench::Report report{std::filesystem::path(o.model).filename().string(),
                                    engine.device() +
                                        (o.int8 && engine.device().find("int8") == std::string::npos
                                             ? ", int8 activations"
                                             : "") +
                                        kv_label(o.kv_type) +
                                        (o.panel_weights ? "" : ", GGUF-order weights"),
                                    std::string(arbor::isa_name(arbor::best_isa())),
                                    arbor::bench::cpu_description(), {}, {}};
        report.rows.push_back(summarize("pp" + std::to_string(o.prompt_tokens), o.threads, pp));
        const bool several = o.depths.size() > 1;
        for (size_t d = 0; d < o.depths.size(); ++d)
            report.rows.push_back(summarize("tg" + std::to_string(o.gen_tokens) +
                                                (o.depths[d] > 0 || several ? " @ d" + std::to_string(o.depths[d]) : ""),
                                            o.threads, tg[d]));
        const arbor::EngineStats stats = engine.stats();
        footprint.kv_mib = double(stats.pages_total) * double(stats.page_bytes) / 1048576.0;
        footprint.file_mib = double(std::filesystem::file_size(o.model)) / 1048576.0;
        footprint.peak_rss_mib = arbor::bench::peak_rss_mib();
        report.footprint = footprint;
        std::fputs((o.json ? arbor::bench::to_json(report) : arbor::bench::to_table(report)).c_str(), stdout);
        return 0;
    } catch (const arbor::Error& e) {
        std::fprintf(stderr, "arbor-bench: error: %s\n", e.what());
        return 1;
    }
}
