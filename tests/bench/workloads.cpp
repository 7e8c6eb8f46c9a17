#include "workloads.h"

#include "bench_report.h"

#include "arbor/chat_template.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>

namespace arbor::bench {
namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double pos = p * double(v.size() - 1);
    const size_t lo = size_t(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

// Runs a set of requests to completion and records what each produced.
class Batch {
public:
    struct Done {
        std::vector<TokenId> tokens;
        std::vector<Clock::time_point> token_times;  // when each token's event arrived
        RequestStats stats;
        Clock::time_point first_token, finished;
    };

    RequestId submit(Engine& engine, Request request) {
        return engine.submit(std::move(request), [this](const Event& e) {
            std::lock_guard lock(mutex_);
            Done& d = done_[e.id];
            if (e.kind == Event::Kind::Token) {
                const Clock::time_point now = Clock::now();
                if (d.tokens.empty()) d.first_token = now;
                d.tokens.push_back(e.token);
                d.token_times.push_back(now);
            } else if (e.kind == Event::Kind::Finished) {
                d.stats = e.stats;
                d.finished = Clock::now();
                ++finished_;
                changed_.notify_all();
            }
        });
    }
    void wait(size_t n) {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return finished_ >= n; });
    }
    const Done& get(RequestId id) { return done_.at(id); }
    const std::map<RequestId, Done>& all() { return done_; }  // after wait()

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<RequestId, Done> done_;
    size_t finished_ = 0;
};

Request chat_request(const ChatFormatter& chat, const std::vector<ChatMessage>& messages, int max_tokens) {
    Request r;
    r.prompt = chat.compose(messages);
    r.options.sampler.temperature = 0.0f;
    r.options.max_tokens = max_tokens;
    return r;
}

const char* const kTopics[] = {
    "the history of bread", "how volcanoes form", "the rules of chess", "why the sky is blue",
    "how to learn a language", "the life of bees", "what a compiler does", "the water cycle",
    "how bicycles balance", "the first moon landing", "how vaccines work", "the origin of tea",
    "how rainbows appear", "the invention of paper", "what black holes are", "how birds migrate",
};

ChatFormatter formatter(const Model& model) {
    return ChatFormatter(model.tokenizer(), detect_chat_template(model.chat_template_source()));
}

struct ConcurrentRun {
    double tps, first_to_last_tps, ttft_p50, ttft_p95;
};

// Decode tokens per second while all the chats decode: from the step that gave the last
// chat its first token to the last token. Each chat's token of that step is the one
// nearest in time to that first token (a step's tokens arrive within microseconds of
// each other, steps milliseconds apart); the tokens after it count. Chats submitted one
// by one race with the engine loop, which may prefill the first alone and the others in
// a later step: a window from the first chat's first token would hold that prefill step
// (120 of 2100 ms with eight chats), which one chat's window never does.
double all_decoding_tps(const std::vector<const Batch::Done*>& chats) {
    Clock::time_point start = Clock::time_point::min(), end = Clock::time_point::min();
    for (const auto* d : chats) {
        if (d->token_times.empty()) return 0.0;  // a chat that failed: no decode to measure
        start = std::max(start, d->first_token);
        end = std::max(end, d->token_times.back());
    }
    size_t tokens = 0;
    for (const auto* d : chats) {
        const auto& times = d->token_times;
        auto after = std::lower_bound(times.begin(), times.end(), start);
        // The nearer of the tokens either side of `start` is this chat's token of that step.
        if (after == times.end() || (after != times.begin() && start - *std::prev(after) < *after - start)) --after;
        tokens += size_t(times.end() - after) - 1;
    }
    return end > start ? double(tokens) / seconds(end - start) : 0.0;
}

// Decode tokens per second from the first chat's first token to the last finish.
double first_to_last_tps(const std::vector<const Batch::Done*>& chats) {
    Clock::time_point start = Clock::time_point::max(), end = Clock::time_point::min();
    size_t tokens = 0;
    for (const auto* d : chats) {
        start = std::min(start, d->first_token);
        end = std::max(end, d->finished);
        tokens += d->tokens.size() - 1;  // tokens produced by decode steps after the first
    }
    return double(tokens) / seconds(end - start);
}

// n chats submitted together to a fresh engine, each generating exactly 128 tokens.
ConcurrentRun run_chats(const Model& model, const EngineOptions& options, const ChatFormatter& chat, int n) {
    Engine engine(model, options);
    Batch batch;
    std::vector<RequestId> ids;
    for (int i = 0; i < n; ++i) {
        std::vector<ChatMessage> messages = {
            {Role::User, chat.encode_content(std::string("Tell me about ") + kTopics[i % 16] + ".")}};
        Request r = chat_request(chat, messages, 128);
        r.options.stop_at_end_of_generation = false;
        ids.push_back(batch.submit(engine, std::move(r)));
    }
    batch.wait(ids.size());
    std::vector<double> ttft;
    std::vector<const Batch::Done*> chats;
    for (RequestId id : ids) {
        const auto& d = batch.get(id);
        ttft.push_back(d.stats.time_to_first_token_ms);
        chats.push_back(&d);
    }
    return {all_decoding_tps(chats), first_to_last_tps(chats), percentile(ttft, 0.5), percentile(ttft, 0.95)};
}

std::string json_list(const std::vector<double>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt("%.2f", v[i]);
    return s + "]";
}

} // namespace

WorkloadResult run_concurrent(const Model& model, const EngineOptions& options, const std::vector<int>& chats,
                              int rounds) {
    const ChatFormatter chat = formatter(model);
    // Every round runs each chat count once, so that a count and one chat are measured
    // seconds apart: on a machine whose speed drifts, the per-round ratio is steadier
    // than a ratio of separate runs.
    std::vector<std::vector<ConcurrentRun>> runs(chats.size());
    for (int r = 0; r < rounds; ++r)
        for (size_t c = 0; c < chats.size(); ++c) runs[c].push_back(run_chats(model, options, chat, chats[c]));
    const auto one = std::find(chats.begin(), chats.end(), 1);
    const std::vector<ConcurrentRun>* single = one == chats.end() ? nullptr : &runs[size_t(one - chats.begin())];

    WorkloadResult out{"| chats | aggregate decode tokens/s | x one chat | first token to last, tokens/s | x one chat "
                       "| ttft p50 ms | ttft p95 ms |\n|---|---|---|---|---|---|---|\n",
                       "{"};
    for (size_t c = 0; c < chats.size(); ++c) {
        std::vector<double> tps, ratio, wide, wide_ratio, p50, p95;
        for (size_t r = 0; r < runs[c].size(); ++r) {
            tps.push_back(runs[c][r].tps);
            wide.push_back(runs[c][r].first_to_last_tps);
            if (single) wide_ratio.push_back(runs[c][r].first_to_last_tps / (*single)[r].first_to_last_tps);
            p50.push_back(runs[c][r].ttft_p50);
            p95.push_back(runs[c][r].ttft_p95);
            if (single) ratio.push_back(runs[c][r].tps / (*single)[r].tps);
        }
        const double median_tps = percentile(tps, 0.5), median_p50 = percentile(p50, 0.5),
                     median_p95 = percentile(p95, 0.5), median_ratio = percentile(ratio, 0.5);
        const std::string n = std::to_string(chats[c]);
        auto ratio_cell = [&](const std::vector<double>& v) { return single ? fmt("%.2f", percentile(v, 0.5)) : "-"; };
        out.table += "| " + n + " | " + fmt("%.1f", median_tps) + " | " + ratio_cell(ratio) + " | " +
                     fmt("%.1f", percentile(wide, 0.5)) + " | " + ratio_cell(wide_ratio) + " | " +
                     fmt("%.1f", median_p50) + " | " + fmt("%.1f", median_p95) + " |\n";
        out.json += std::string(c ? ", " : "") + "\"" + n + "\": {\"aggregate_decode_tps\": " +
                    fmt("%.2f", median_tps) + ", \"aggregate_decode_tps_runs\": " + json_list(tps) +
                    (single ? ", \"vs_one_chat\": " + fmt("%.3f", median_ratio) +
                                  ", \"vs_one_chat_runs\": " + json_list(ratio)
                            : std::string()) +
                    ", \"first_token_to_last_tps\": " + fmt("%.2f", percentile(wide, 0.5)) +
                    (single ? ", \"first_token_to_last_vs_one_chat\": " + fmt("%.3f", percentile(wide_ratio, 0.5))
                            : std::string()) +
                    ", \"ttft_ms_p50\": " + fmt("%.2f", median_p50) + ", \"ttft_ms_p95\": " + fmt("%.2f", median_p95) +
                    "}";
    }
    out.json += "}";
    if (rounds > 1)
        out.table += "\nmedians of " + std::to_string(rounds) +
                     " rounds; x one chat: median of each round's ratio to that round's one chat\n";
    out.table += "aggregate decode: while all chats decode (from the step that gave the last chat its first token); "
                 "first token to last: from the first chat's first token\n";
    return out;
}

namespace {

struct MultiturnPass {
    std::vector<std::vector<double>> ttft, computed;  // per turn, per conversation
    int64_t prompt_tokens = 0, computed_tokens = 0, warmup_computed = 0, new_tokens = 0;
};

constexpr int kTurns = 6;

// One pass of the multiturn workload on a fresh engine.
MultiturnPass multiturn_pass(const Model& model, const EngineOptions& options, const ChatFormatter& chat) {
    constexpr int kConversations = 16, kReplyTokens = 48;
    const char* const follow_ups[] = {"Can you say more?", "Give me an example.", "Why is that?",
                                      "Summarize it in one sentence.", "What else should I know?"};
    Engine engine(model, options);
    Batch warmups;  // the app's warm-up after each reply (ChatSession::warmFollowUp)
    size_t warmup_count = 0;
    std::vector<std::vector<ChatMessage>> conversations(kConversations);
    std::vector<size_t> previous_total(kConversations, 0);  // previous turn's prompt + reply
    MultiturnPass pass;
    pass.ttft.resize(kTurns);
    pass.computed.resize(kTurns);
    for (int turn = 0; turn < kTurns; ++turn) {
        for (int c = 0; c < kConversations; ++c) {
            auto& messages = conversations[size_t(c)];
            if (turn == 0) messages.push_back({Role::System, chat.encode_content("You are a knowledgeable, concise assistant.")});
            const std::string user = turn == 0 ? std::string("Tell me about ") + kTopics[c] + "." : follow_ups[(turn - 1) % 5];
            messages.push_back({Role::User, chat.encode_content(user)});
            Batch batch;
            Request r = chat_request(chat, messages, kReplyTokens);
            const std::vector<TokenId> prompt = r.prompt;
            const size_t prompt_len = prompt.size();
            const RequestId id = batch.submit(engine, std::move(r));
            batch.wait(1);
            const auto& d = batch.get(id);
            pass.ttft[size_t(turn)].push_back(d.stats.time_to_first_token_ms);
            pass.prompt_tokens += int64_t(prompt_len);
            pass.computed_tokens += int64_t(prompt_len) - d.stats.cached_tokens;
            pass.computed[size_t(turn)].push_back(double(int64_t(prompt_len) - d.stats.cached_tokens));
            pass.new_tokens += int64_t(prompt_len - previous_total[size_t(c)]);
            previous_total[size_t(c)] = prompt_len + d.tokens.size();
            messages.push_back({Role::Assistant, d.tokens});
            // Like the app: the next turn's opening is computed while the user would type.
            // A user types for seconds, so it is done before anyone's next request; left
            // running, it would share the next conversation's first step or run just
            // before it, whichever the race between two threads decided, and turn 1's
            // median time to first token jumped between 15 and 28 ms from run to run.
            Request warm;
            warm.prompt = chat.follow_up_prefix(prompt, d.tokens);
            warm.kind = RequestKind::PrefillOnly;
            warmups.submit(engine, std::move(warm));
            warmups.wait(++warmup_count);
        }
    }
    for (const auto& [id, d] : warmups.all()) pass.warmup_computed += d.stats.prompt_tokens - d.stats.cached_tokens;
    pass.computed_tokens += pass.warmup_computed;
    return pass;
}

} // namespace

WorkloadResult run_multiturn(const Model& model, const EngineOptions& options, int passes) {
    const ChatFormatter chat = formatter(model);
    std::vector<MultiturnPass> runs;
    for (int p = 0; p < passes; ++p) runs.push_back(multiturn_pass(model, options, chat));
    // Turn 1 and turn 6 of a pass are measured some 25 s apart, long enough for a shared
    // machine's speed to drift by a third; more passes give that ratio a median.
    std::vector<double> ratios;
    for (const auto& run : runs) ratios.push_back(percentile(run.ttft[kTurns - 1], 0.5) / percentile(run.ttft[0], 0.5));
    WorkloadResult out{"| turn | median ttft ms | median computed prompt tokens |\n|---|---|---|\n", "{\"turns\": ["};
    for (int t = 0; t < kTurns; ++t) {
        std::vector<double> ttft, computed;
        for (const auto& run : runs) {
            ttft.insert(ttft.end(), run.ttft[size_t(t)].begin(), run.ttft[size_t(t)].end());
            computed.insert(computed.end(), run.computed[size_t(t)].begin(), run.computed[size_t(t)].end());
        }
        const double median = percentile(ttft, 0.5);
        const double computed_median = percentile(computed, 0.5);
        out.table += "| " + std::to_string(t + 1) + " | " + fmt("%.1f", median) + " | " + fmt("%.0f", computed_median) + " |\n";
        out.json += std::string(t ? ", " : "") + "{\"turn\": " + std::to_string(t + 1) +
                    ", \"ttft_ms_median\": " + fmt("%.2f", median) +
                    ", \"computed_prompt_tokens_median\": " + fmt("%.1f", computed_median) + ", \"ttft_ms\": " +
                    json_list(ttft) + "}";
    }
    // Greedy replies: every pass sends and computes the same tokens; the first one's counts.
    const MultiturnPass& first = runs.front();
    out.table += "\nturn 6 / turn 1 median ttft: " + fmt("%.2f", percentile(ratios, 0.5)) +
                 (passes > 1 ? " (median of " + std::to_string(passes) + " passes: " + json_list(ratios) + ")" : "") +
                 "\nprompt tokens " + std::to_string(first.prompt_tokens) + ", computed prefill tokens " +
                 std::to_string(first.computed_tokens) + " (" + std::to_string(first.warmup_computed) +
                 " of them by the warm-ups after each reply), new tokens " + std::to_string(first.new_tokens) +
                 " (ratio " + fmt("%.3f", double(first.computed_tokens) / double(first.new_tokens)) + ")" +
                 (passes > 1 ? " per pass" : "") + "\n";
    out.json += "], \"turn6_vs_turn1_ttft\": " + fmt("%.3f", percentile(ratios, 0.5)) +
                ", \"turn6_vs_turn1_ttft_passes\": " + json_list(ratios) +
                ", \"prompt_tokens\": " + std::to_string(first.prompt_tokens) + ", \"computed_prefill_tokens\": " +
                std::to_string(first.computed_tokens) + ", \"warmup_computed_tokens\": " +
                std::to_string(first.warmup_computed) + ", \"new_tokens\": " + std::to_string(first.new_tokens) + "}";
    return out;
}

WorkloadResult run_shared_prefix(const Model& model, const EngineOptions& options) {
    const ChatFormatter chat = formatter(model);
    std::string system;
    while (chat.encode_content(system).size() < 1000)
        system += "You are the support assistant of a hardware store. Answer politely, mention opening hours "
                  "(8 to 18 on weekdays) when relevant, and never invent prices. ";
    auto system_ids = chat.encode_content(system);
    system_ids.resize(1000);
    Engine engine(model, options);
    Batch batch;
    std::vector<RequestId> ids;
    int64_t prompt_tokens = 0;
    const auto start = Clock::now();
    for (int i = 0; i < 32; ++i) {
        std::vector<ChatMessage> messages = {
            {Role::System, system_ids},
            {Role::User, chat.encode_content(std::string("Question ") + std::to_string(i) + ": do you sell " +
                                             kTopics[i % 16] + " books?")}};
        Request r = chat_request(chat, messages, 16);
        prompt_tokens += int64_t(r.prompt.size());
        ids.push_back(batch.submit(engine, std::move(r)));
    }
    batch.wait(ids.size());
    const double total = seconds(Clock::now() - start);
    int64_t computed = 0;
    for (RequestId id : ids) computed += batch.get(id).stats.prompt_tokens - batch.get(id).stats.cached_tokens;
    WorkloadResult out;
    out.table = "32 requests, 1000-token shared system prompt: total " + fmt("%.2f", total) + " s, prompt tokens " +
                std::to_string(prompt_tokens) + ", computed prefill tokens " + std::to_string(computed) + "\n";
    out.json = "{\"requests\": 32, \"total_seconds\": " + fmt("%.3f", total) + ", \"prompt_tokens\": " +
               std::to_string(prompt_tokens) + ", \"computed_prefill_tokens\": " + std::to_string(computed) + "}";
    return out;
}

} // namespace arbor::bench
