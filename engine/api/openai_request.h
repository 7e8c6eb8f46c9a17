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
//
// `tools` (a list of {"type": "function", "function": {"name": ...}}) is handed to the
// model's chat template, which shows the model the definitions; tool_choice may be
// "auto" (the default) or "none" (the tools are left out). Replies come back as text:
// tool calls the model writes are not parsed into `tool_calls`, and messages of role
// "tool" are refused.
#pragma once

#include "api/json.h"
#include "arbor/chat_template.h"
#include "arbor/generator.h"
#include "arbor/jinja.h"

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
    jinja::Value tools;  // the request's tool list as the template sees it; undefined when none
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
