// Collects the events of engine requests for the tests.
#pragma once

#include "arbor/engine.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

namespace arbor::test {

// A request for max_tokens greedy tokens.
inline Request greedy(std::vector<TokenId> prompt, int max_tokens) {
    Request r;
    r.prompt = std::move(prompt);
    r.options.sampler.temperature = 0.0f;
    r.options.max_tokens = max_tokens;
    return r;
}

// A warm-up: the prompt's KV only (RequestKind::PrefillOnly).
inline Request prefill_only(std::vector<TokenId> prompt) {
    Request r;
    r.prompt = std::move(prompt);
    r.kind = RequestKind::PrefillOnly;
    return r;
}

struct Outcome {
    std::vector<TokenId> tokens;
    std::string text;
    bool finished = false;
    FinishReason finish = FinishReason::Stop;
    std::string error;
    RequestStats stats;
    int token_events = 0;
    std::vector<int32_t> prefilled;  // of each Progress event, in order
    int progress_after_tokens = 0;   // Progress events that came after a Token event
};

class Collector {
public:
    // Events are keyed by the request id the engine reports.
    RequestId submit(Engine& engine, Request request);
    bool wait(RequestId id, std::chrono::seconds timeout = std::chrono::seconds(120));
    bool wait_for_tokens(RequestId id, int n, std::chrono::seconds timeout = std::chrono::seconds(120));
    Outcome get(RequestId id);

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<RequestId, Outcome> outcomes_;
};

inline RequestId Collector::submit(Engine& engine, Request request) {
    return engine.submit(std::move(request), [this](const Event& e) {
        std::lock_guard lock(mutex_);
        Outcome& o = outcomes_[e.id];
        if (e.kind == Event::Kind::Token) {
            if (e.token >= 0) o.tokens.push_back(e.token);
            o.text += e.text;
            ++o.token_events;
        } else if (e.kind == Event::Kind::Progress) {
            o.prefilled.push_back(e.prefilled);
            if (o.token_events > 0) ++o.progress_after_tokens;
        } else {
            o.finished = true;
            o.finish = e.finish;
            o.error = e.error;
        }
        o.stats = e.stats;
        changed_.notify_all();
    });
}

inline bool Collector::wait(RequestId id, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return outcomes_[id].finished; });
}

inline bool Collector::wait_for_tokens(RequestId id, int n, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout,
                             [&] { return outcomes_[id].finished || int(outcomes_[id].tokens.size()) >= n; });
}

inline Outcome Collector::get(RequestId id) {
    std::lock_guard lock(mutex_);
    return outcomes_[id];
}

} // namespace arbor::test
