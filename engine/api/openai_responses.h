// JSON objects of OpenAI's API as this server sends them: completions, streamed chunks,
// usage and the model list. Kept apart from the engine so their shape is tested alone.
#pragma once

#include "api/json.h"
#include "arbor/engine.h"
#include "arbor/reply_reasoning.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace arbor::api {

struct ResponseMeta {
    std::string id;     // "chatcmpl-..." or "cmpl-..."
    int64_t created = 0;  // Unix seconds
    std::string model;
};

// A fresh id such as "chatcmpl-5f0c..." (24 random hex digits after the prefix).
std::string new_response_id(std::string_view prefix);

// "stop" or "length" (a full context included, as OpenAI reports it); null for requests
// that did not end normally.
Json finish_reason_json(FinishReason reason);

struct Usage {
    int64_t prompt_tokens = 0;
    int64_t completion_tokens = 0;
    int64_t cached_tokens = 0;
    void add(const RequestStats& s);
};
Json usage_json(const Usage& u);

// message.content is the reply's answer; message.reasoning_content its reasoning, left out
// when it has none (as llama.cpp's server and OpenAI-compatible reasoning models send it).
Json chat_completion_json(const ResponseMeta& meta, const ReplyParts& reply, FinishReason finish, const Usage& usage);
// One chunk: role (first chunk only, empty otherwise), content piece, finish reason; a
// reasoning piece as delta.reasoning_content (none when empty).
Json chat_chunk_json(const ResponseMeta& meta, std::string_view role, std::string_view content,
                     const Json& finish_reason, bool with_usage_null, std::string_view reasoning = {});
// The closing usage chunk: no choices.
Json chat_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

// A text completion; choices are added by the caller with completion_choice_json.
Json completion_json(const ResponseMeta& meta, Json choices, const Usage& usage);
Json completion_choice_json(size_t index, const std::string& text, const Json& finish_reason);
Json completion_chunk_json(const ResponseMeta& meta, size_t index, std::string_view text,
                           const Json& finish_reason, bool with_usage_null);
Json completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

Json model_json(const std::string& id, int64_t created);

// One server-sent event: "data: <json>\n\n".
std::string sse_event(const Json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

} // namespace arbor::api
