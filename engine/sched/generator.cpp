#include "arbor/generator.h"

#include "arbor/error.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <numeric>

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
            std::lock_guard lock(out.mutex);
            out.done = true;
            out.ended.notify_all();
        }
    });
    std::unique_lock lock(out.mutex);
    out.ended.wait(lock, [&] { return out.done; });
    return std::move(out.result);
}

Generator::Generator(const Model& model, Backend& backend, int32_t prefill_chunk)
    : model_(model), backend_(backend), prefill_chunk_(std::max(1, prefill_chunk)) {
    const int32_t pages = backend.page_count();
    block_table_.resize(size_t(pages));
    std::iota(block_table_.begin(), block_table_.end(), 0);
}

int32_t Generator::context_size() const { return backend_.page_count() * backend_.page_size(); }

const std::vector<float>& Generator::run(std::span<const TokenId> ids, int32_t start_pos, SequenceRows::Logits mode) {
    if (start_pos + int64_t(ids.size()) > context_size())
        throw Error("context full: " + std::to_string(start_pos + ids.size()) + " tokens exceed the KV budget of " +
                    std::to_string(context_size()));
    ForwardBatch batch;
    batch.tokens.assign(ids.begin(), ids.end());
    SequenceRows rows;
    rows.first_row = 0;
    rows.n_rows = int32_t(ids.size());
    rows.start_pos = start_pos;
    const size_t pages_needed = size_t((start_pos + rows.n_rows + backend_.page_size() - 1) / backend_.page_size());
    rows.block_table = std::span<const int32_t>(block_table_.data(), pages_needed);
    rows.logits = mode;
    batch.sequences.push_back(rows);
    backend_.forward(batch, logits_);
    return logits_;
}

const std::vector<float>& Generator::prefill(std::span<const TokenId> ids, int32_t* reused) {
    if (ids.empty()) throw Error("empty prompt");
    if (int64_t(ids.size()) > context_size())
        throw Error("prompt of " + std::to_string(ids.size()) + " tokens exceeds the context of " +
                    std::to_string(context_size()));
    size_t common = 0;
    while (common < tokens_.size() && common < ids.size() && tokens_[common] == ids[common]) ++common;
    common = std::min(common, ids.size() - 1);  // the last id must run to produce logits
    if (reused) *reused = int32_t(common);
    tokens_.assign(ids.begin(), ids.end());
    for (size_t start = common; start < ids.size(); start += size_t(prefill_chunk_)) {
        const size_t n = std::min(size_t(prefill_chunk_), ids.size() - start);
        run(ids.subspan(start, n), int32_t(start), SequenceRows::Logits::Last);
    }
    return logits_;
}

const std::vector<float>& Generator::decode(TokenId id) {
    const int32_t pos = int32_t(tokens_.size());
    run(std::span<const TokenId>(&id, 1), pos, SequenceRows::Logits::Last);
    tokens_.push_back(id);
    return logits_;
}

std::vector<float> Generator::logits_for_all(std::span<const TokenId> ids) {
    tokens_.clear();
    std::vector<float> all;
    for (size_t start = 0; start < ids.size(); start += size_t(prefill_chunk_)) {
        const size_t n = std::min(size_t(prefill_chunk_), ids.size() - start);
        const auto& l = run(ids.subspan(start, n), int32_t(start), SequenceRows::Logits::All);
        all.insert(all.end(), l.begin(), l.end());
    }
    tokens_.assign(ids.begin(), ids.end());
    return all;
}

GenerateResult Generator::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                   const std::function<bool(std::string_view)>& on_text) {
    tokens_.clear();  // the engine writes the backend's pages
    EngineOptions engine_options;
    engine_options.max_batch_tokens = prefill_chunk_;
    Engine engine(model_, backend_, engine_options);
    Request request;
    request.prompt.assign(prompt.begin(), prompt.end());
    request.options = options;
    return arbor::generate(engine, std::move(request), on_text);
}

} // namespace arbor
