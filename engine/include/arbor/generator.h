// Generation as a client of the Engine, the one serving path: generate() runs one request
// to its end (the command line, the benchmark). Generator adds, for the numerical tests,
// a single sequence on a backend of their own: logits after a prefill or a decode step,
// and replies generated through an Engine on that backend.
#pragma once

#include "arbor/backend.h"
#include "arbor/engine.h"
#include "arbor/generate_options.h"
#include "arbor/model.h"

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

struct GenerateResult {
    std::vector<TokenId> tokens;     // generated ids, including a final end-of-turn id
    std::string text;                // streamed text (stop strings removed)
    FinishReason finish = FinishReason::Length;
    std::string error;               // with FinishReason::Error
    RequestStats stats;              // the engine's figures for the request
    // Prompt tokens computed (not from the cache) per second until the first token.
    double prefill_tokens_per_second() const;
};

// Submits `request` to `engine` and waits for its end. on_text receives the reply's text
// in UTF-8-safe pieces, on the engine's thread; returning false cancels the request (no
// text after that piece is kept).
GenerateResult generate(Engine& engine, Request request,
                        const std::function<bool(std::string_view)>& on_text = {});

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

    // Generates a reply to `prompt` through an Engine running on this backend (see
    // arbor::generate); the sequence is empty afterwards (the engine used its pages).
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
