// The bodies of /v1/chat/completions and /v1/completions, checked field by field and
// turned into engine options. Every problem is an ApiError (400) naming the field.
//
// Sampling fields follow OpenAI (temperature, top_p, max_tokens or
// max_completion_tokens, stop, seed, presence_penalty, frequency_penalty) plus the
// usual local-server extensions top_k, min_p and repeat_penalty. A field that is absent
// (or null) keeps the engine's default; without a seed each request draws a random one;
// without a token limit a reply may run to the end of the context. cache_salt (a
// non-empty string, as in vLLM) keeps the request's prompt out of the prefix cache that
// requests without the same salt use.
#pragma once

#include "api/json.h"
#include "arbor/chat_template.h"
#include "arbor/generator.h"

#include <optional>
#include <string>
#include <vector>

namespace arbor::api {

struct SamplingRequest {
    std::string model;
    GenerateOptions options;               // options.max_tokens is set later from the context
    std::optional<int64_t> max_tokens;
    bool stream = false;
    bool include_usage = false;
    std::optional<std::string> cache_salt;  // a further prefix-cache namespace (see cache_scope.h)
};

struct ChatTurn {
    Role role = Role::User;
    std::string text;
};

struct ChatRequest {
    SamplingRequest sampling;
    std::vector<ChatTurn> messages;
};

// A completion prompt: text, or token ids given directly.
struct PromptInput {
    std::string text;
    std::vector<TokenId> ids;
    bool is_ids = false;
};

struct CompletionRequest {
    SamplingRequest sampling;
    std::vector<PromptInput> prompts;  // one choice per prompt
};

ChatRequest parse_chat_request(const Json& body);
CompletionRequest parse_completion_request(const Json& body, int32_t n_vocab);

} // namespace arbor::api
