#include "arbor/generator.h"

#include "arbor/error.h"
#include "reply_stream.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace arbor {
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
} // namespace

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    }
    return "unknown";
}

double GenerateResult::prefill_tokens_per_second() const {
    const int32_t computed = prompt_tokens - cached_tokens;
    return prefill_seconds > 0 ? computed / prefill_seconds : 0.0;
}

double GenerateResult::decode_tokens_per_second() const {
    // The first token comes from the prefill's logits; decode time covers the rest.
    const size_t n = tokens.size() > 1 ? tokens.size() - 1 : 0;
    return decode_seconds > 0 ? double(n) / decode_seconds : 0.0;
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
    GenerateResult result;
    result.prompt_tokens = int32_t(prompt.size());
    const auto t0 = Clock::now();
    const std::vector<float>* logits = &prefill(prompt, &result.cached_tokens);
    result.prefill_seconds = seconds_since(t0);

    Sampler sampler(options.sampler, model_.config().n_vocab);
    for (TokenId id : prompt) sampler.accept(id);
    ReplyStream reply(model_.tokenizer(), options);
    auto emit = [&](const std::string& text) {
        if (text.empty()) return true;
        result.text += text;
        return on_text ? on_text(text) : true;
    };

    const auto t_decode = Clock::now();
    // The last sampled id is never run through the model here: tokens_ lists only ids
    // whose KV is computed, and a follow-up prompt that contains the id computes it.
    while (options.max_tokens > 0) {
        const TokenId id = sampler.sample(*logits);
        sampler.accept(id);
        result.tokens.push_back(id);
        const auto step = reply.push(id);
        if (!emit(step.text)) {
            result.finish = FinishReason::Cancelled;
            break;
        }
        if (step.finish) {
            result.finish = *step.finish;
            break;
        }
        if (int64_t(tokens_.size()) >= context_size()) break;
        logits = &decode(id);
    }
    if (result.finish != FinishReason::Cancelled) emit(reply.flush());
    result.decode_seconds = seconds_since(t_decode);
    return result;
}

} // namespace arbor
