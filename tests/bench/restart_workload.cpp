// arbor-bench --workload restart: how fast a long conversation continues after the
// program restarts. For each conversation length, the follow-up's time to first token
// (a) hot, on the engine that computed the conversation, (b) on a new engine reading
// the pages its predecessor left in the disk tier, (c) on a new engine without the tier
// (recomputing everything); plus the disk's bytes per token. Lengths that do not fit the
// engine's context are reported as skipped. The pages are read from files just written,
// so mostly from the OS page cache.
#include "workloads.h"

#include "bench_report.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

namespace arbor::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Submits one request and waits for its end; its statistics.
RequestStats run_one(Engine& engine, Request r) {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    RequestStats stats;
    engine.submit(std::move(r), [&](const Event& e) {
        if (e.kind != Event::Kind::Finished) return;
        std::lock_guard lock(mutex);
        stats = e.stats;
        finished = true;
        done.notify_all();
    });
    std::unique_lock lock(mutex);
    done.wait(lock, [&] { return finished; });
    return stats;
}

Request first_token_only(std::vector<TokenId> prompt) {
    Request r;
    r.prompt = std::move(prompt);
    r.options.sampler.temperature = 0.0f;
    r.options.max_tokens = 1;
    return r;
}

// `n` tokens of prose-like ids: the model's own encoding of repeated text.
std::vector<TokenId> conversation(const Model& model, size_t n) {
    const std::string text =
        "The committee met again on Thursday to discuss the bridge over the river, the cost of repairs, "
        "and whether the ferry should run through the winter. ";
    std::vector<TokenId> ids = model.tokenizer().encode(text, model.tokenizer().adds_bos(), false);
    const std::vector<TokenId> more = model.tokenizer().encode(text, false, false);
    while (ids.size() < n) ids.insert(ids.end(), more.begin(), more.end());
    ids.resize(n);
    return ids;
}

// Bytes of the page files under dir per token they hold.
double bytes_per_token(const fs::path& dir, int32_t page_size) {
    uint64_t total = 0, files = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
        if (it->path().extension() == ".kvp") {
            total += it->file_size(ec);
            ++files;
        }
    return files == 0 ? 0.0 : double(total) / double(files * uint64_t(page_size));
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

} // namespace

WorkloadResult run_restart(const Model& model, const EngineOptions& options, const std::vector<int>& lengths,
                           int repetitions) {
    const std::vector<TokenId> follow = model.tokenizer().encode(
        "\nAnd what did they decide about the ferry in the end?\n", false, false);
    WorkloadResult out;
    out.table = "follow-up time to first token after a conversation of N tokens (median of " +
                std::to_string(repetitions) + ")\n" +
                "N        hot ms   restart+disk ms   restart recompute ms   recompute/disk   disk/hot   disk bytes/token\n";
    out.json = "[";
    for (const int n : lengths) {
        const auto history = conversation(model, size_t(n));
        std::vector<TokenId> prompt = history;
        prompt.insert(prompt.end(), follow.begin(), follow.end());
        std::vector<double> hot, disk, cold;
        double per_token = 0;
        int32_t disk_tokens = 0;
        bool fits = true;
        for (int rep = 0; rep < repetitions && fits; ++rep) {
            // Under the system's temporary directory ($TMPDIR, else /tmp).
            std::string tmpl = (fs::temp_directory_path() / "arbor-bench-kv-XXXXXX").string();
            if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary directory in " + tmpl);
            const fs::path dir = tmpl;
            EngineOptions with = options;
            with.kv_disk_bytes = uint64_t(64) << 30;
            with.kv_disk_dir = dir;
            with.kv_disk_min_pages = 1;
            EngineOptions without = options;
            without.kv_disk_bytes = 0;
            {
                Engine first(model, with);
                if (int32_t(prompt.size()) + 2 > first.context_size()) {
                    fits = false;
                    fs::remove_all(dir);
                    break;
                }
                run_one(first, first_token_only(history));
                hot.push_back(run_one(first, first_token_only(prompt)).time_to_first_token_ms);
            }  // shutdown writes every cached page
            per_token = bytes_per_token(dir, options.backend.page_size);
            {
                Engine restarted(model, with);
                const RequestStats s = run_one(restarted, first_token_only(prompt));
                disk.push_back(s.time_to_first_token_ms);
                disk_tokens = s.disk_tokens;
            }
            {
                Engine recompute(model, without);
                cold.push_back(run_one(recompute, first_token_only(prompt)).time_to_first_token_ms);
            }
            fs::remove_all(dir);
        }
        if (out.json.size() > 1) out.json += ", ";
        if (!fits) {
            out.table += fmt("%-8.0f", double(n)) + " skipped: " + std::to_string(prompt.size()) +
                         " tokens exceed the engine's context\n";
            out.json += "{\"tokens\": " + std::to_string(n) + ", \"skipped\": \"exceeds the context\"}";
            continue;
        }
        const double h = median(hot), d = median(disk), c = median(cold);
        out.table += fmt("%-8.0f", double(n)) + fmt("%7.1f", h) + fmt("%18.1f", d) + fmt("%23.1f", c) + fmt("%17.1fx", c / d) +
                     fmt("%10.2fx", d / h) + fmt("%19.0f", per_token) + "   (" + std::to_string(disk_tokens) +
                     " prompt tokens read from disk)\n";
        out.json += "{\"tokens\": " + std::to_string(n) + ", \"hot_ttft_ms\": " + fmt("%.2f", h) +
                    ", \"restart_disk_ttft_ms\": " + fmt("%.2f", d) + ", \"restart_recompute_ttft_ms\": " +
                    fmt("%.2f", c) + ", \"disk_tokens\": " + std::to_string(disk_tokens) +
                    ", \"disk_bytes_per_token\": " + fmt("%.0f", per_token) + "}";
    }
    out.json += "]";
    return out;
}

} // namespace arbor::bench
