// Generation as a client of the Engine, the one serving path: generate() runs one request
// to its end (the command line, the benchmark). Generator adds, for the numerical tests,
// one sequence probed through an Engine of its own on their backend: logits after a
// prefill or a decode step (prefill-only requests returning logits), and replies.
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
    std::vector<float> logits;       // what Request::logits asked for (Event::logits)
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
    // Runs an Engine on `backend`, which nothing else may use while the generator works
    // (it keeps the engine's cached pages there), in steps of up to prefill_chunk rows.
    Generator(const Model& model, Backend& backend, int32_t prefill_chunk = 512);

    int32_t context_size() const { return engine_.context_size(); }
    // Forgets the sequence and every cached prefix: the next prefill computes all its ids.
    void reset();

    // Makes the sequence hold exactly `ids` and returns the logits after the last id.
    // The engine's prefix cache serves what earlier calls since reset() computed of ids
    // (all but at least the last id; `reused` receives how many). Throws arbor::Error
    // when the engine refuses ids (empty, not shorter than the context).
    const std::vector<float>& prefill(std::span<const TokenId> ids, int32_t* reused = nullptr);
    // Appends one id and returns its logits.
    const std::vector<float>& decode(TokenId id);
    // Logits after every id of `ids` computed from an empty cache (n x n_vocab).
    std::vector<float> logits_for_all(std::span<const TokenId> ids);

    // Generates a reply to `prompt` through the generator's engine (see arbor::generate).
    GenerateResult generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                            const std::function<bool(std::string_view)>& on_text = {});

private:
    // Computes `ids` as a prefill-only request returning `which` logits; throws on error.
    GenerateResult probe(std::span<const TokenId> ids, SequenceRows::Logits which);

    Engine engine_;
    std::vector<TokenId> tokens_;
    std::vector<float> logits_;
};

} // namespace arbor
