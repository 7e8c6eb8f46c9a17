#include "arbor/generator.h"

#include "arbor/error.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>

namespace arbor {

double GenerateResult::prefill_tokens_per_second() const {
    const int32_t computed = stats.prompt_tokens - stats.cached_tokens;
    return stats.time_to_first_token_ms > 0 ? computed / (stats.time_to_first_token_ms / 1000.0) : 0.0;
}

GenerateResult generate(Engine& engine, Request request, const std::function<bool(std::string_view)>& on_text) {
    // Filled on the engine's thread; read here once `done` is set.
    struct Outcome {
        std::mutex mutex;
        std::condition_variable ended;
        bool done = false;
        bool stopped = false;  // on_text asked to stop
        GenerateResult result;
    } out;
    engine.submit(std::move(request), [&out, &on_text, &engine](const Event& e) {
        GenerateResult& r = out.result;
        if (e.kind == Event::Kind::Token) {
            if (e.token >= 0) r.tokens.push_back(e.token);  // the last event may carry held-back text only
            if (out.stopped || e.text.empty()) return;
            r.text += e.text;
            if (on_text && !on_text(e.text)) {
                out.stopped = true;
                engine.cancel(e.id);
            }
        } else if (e.kind == Event::Kind::Finished) {
            r.finish = out.stopped ? FinishReason::Cancelled : e.finish;
            r.error = e.error;
            r.stats = e.stats;
            r.logits = e.logits;
            std::lock_guard lock(out.mutex);
            out.done = true;
            out.ended.notify_all();
        }
    });
    std::unique_lock lock(out.mutex);
    out.ended.wait(lock, [&] { return out.done; });
    return std::move(out.result);
}

namespace {

EngineOptions steps_of(int32_t rows) {
    EngineOptions options;
    options.max_batch_tokens = std::max(1, rows);
    return options;
}

} // namespace

Generator::Generator(const Model& model, Backend& backend, int32_t prefill_chunk)
    : engine_(model, backend, steps_of(prefill_chunk)) {}

void Generator::reset() {
    tokens_.clear();
    engine_.clear_cache();  // before any later request is scheduled: the loop takes both in order
}

GenerateResult Generator::probe(std::span<const TokenId> ids, SequenceRows::Logits which) {
    Request request;
    request.prompt.assign(ids.begin(), ids.end());
    request.kind = RequestKind::PrefillOnly;
    request.logits = which;
    GenerateResult result = arbor::generate(engine_, std::move(request));
    if (result.finish == FinishReason::Error) throw Error(result.error);
    return result;
}

const std::vector<float>& Generator::prefill(std::span<const TokenId> ids, int32_t* reused) {
    GenerateResult result = probe(ids, SequenceRows::Logits::Last);
    if (reused) *reused = result.stats.cached_tokens;
    tokens_.assign(ids.begin(), ids.end());
    logits_ = std::move(result.logits);
    return logits_;
}

const std::vector<float>& Generator::decode(TokenId id) {
    std::vector<TokenId> next = tokens_;
    next.push_back(id);
    return prefill(next);
}

std::vector<float> Generator::logits_for_all(std::span<const TokenId> ids) {
    reset();
    GenerateResult result = probe(ids, SequenceRows::Logits::All);
    tokens_.assign(ids.begin(), ids.end());
    return std::move(result.logits);
}

GenerateResult Generator::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                   const std::function<bool(std::string_view)>& on_text) {
    Request request;
    request.prompt.assign(prompt.begin(), prompt.end());
    request.options = options;
    return arbor::generate(engine_, std::move(request), on_text);
}

} // namespace arbor
