// Single-sequence generation over a backend: the engine core used by the command line,
// the benchmark and the fidelity tests. The sequence keeps its KV between calls, so a
// prompt that extends what was computed before only computes the new tokens.
#pragma once

#include "arbor/backend.h"
#include "arbor/model.h"
#include "arbor/sampler.h"

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

struct GenerateOptions {
    SamplerParams sampler;
    int32_t max_tokens = 256;
    std::vector<std::string> stop_strings;
    bool stop_at_end_of_generation = true;  // end on eos / end-of-turn tokens
};

enum class FinishReason { Stop, Length, Cancelled, Error };
std::string_view finish_reason_name(FinishReason reason);

struct GenerateResult {
    std::vector<TokenId> tokens;     // generated ids, including a final end-of-turn id
    std::string text;                // streamed text (stop strings removed)
    FinishReason finish = FinishReason::Length;
    int32_t prompt_tokens = 0;
    int32_t cached_tokens = 0;       // prompt tokens whose KV was reused
    double prefill_seconds = 0.0;
    double decode_seconds = 0.0;     // from the first to the last generated token
    double prefill_tokens_per_second() const;
    double decode_tokens_per_second() const;
};

class Generator {
public:
    // Takes the sequence's pages 0..page_count-1 of the backend in order.
    Generator(const Model& model, Backend& backend, int32_t prefill_chunk = 512);

    int32_t context_size() const;
    const std::vector<TokenId>& tokens() const { return tokens_; }
    void reset() { tokens_.clear(); }

    // Makes the sequence hold exactly `ids`, reusing the KV of the longest common prefix
    // (at least the last id is recomputed) and returns the logits after the last id.
    // Throws arbor::Error when ids is empty or exceeds the context.
    const std::vector<float>& prefill(std::span<const TokenId> ids, int32_t* reused = nullptr);
    // Appends one id and returns its logits.
    const std::vector<float>& decode(TokenId id);
    // Logits after every id of `ids` computed from an empty sequence (n x n_vocab).
    std::vector<float> logits_for_all(std::span<const TokenId> ids);

    // Prefills `prompt`, then samples until a stop condition. on_text receives UTF-8-safe
    // pieces; returning false cancels.
    GenerateResult generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                            const std::function<bool(std::string_view)>& on_text = {});

private:
    const std::vector<float>& run(std::span<const TokenId> ids, int32_t start_pos, SequenceRows::Logits mode);

    const Model& model_;
    Backend& backend_;
    int32_t prefill_chunk_;
    std::vector<int32_t> block_table_;
    std::vector<TokenId> tokens_;
    std::vector<float> logits_;
};

} // namespace arbor
