#include "api/openai_responses.h"

#include <random>

namespace arbor::api {
namespace {

Json base(const ResponseMeta& meta, const char* object) {
    Json o = Json::object();
    o.set("id", meta.id);
    o.set("object", object);
    o.set("created", meta.created);
    o.set("model", meta.model);
    return o;
}

} // namespace

std::string new_response_id(std::string_view prefix) {
    thread_local std::mt19937_64 rng(std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32));
    static const char* const kHex = "0123456789abcdef";
    std::string id(prefix);
    for (int i = 0; i < 24; ++i) id.push_back(kHex[rng() & 15]);
    return id;
}

Json finish_reason_json(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return Json("stop");
    case FinishReason::Length:
    case FinishReason::ContextFull: return Json("length");
    default: return Json();
    }
}

void Usage::add(const RequestStats& s) {
    prompt_tokens += s.prompt_tokens;
    completion_tokens += s.generated_tokens;
    cached_tokens += s.cached_tokens;
}

Json usage_json(const Usage& u) {
    Json o = Json::object();
    o.set("prompt_tokens", u.prompt_tokens);
    o.set("completion_tokens", u.completion_tokens);
    o.set("total_tokens", u.prompt_tokens + u.completion_tokens);
    Json details = Json::object();
    details.set("cached_tokens", u.cached_tokens);
    o.set("prompt_tokens_details", std::move(details));
    return o;
}

Json chat_completion_json(const ResponseMeta& meta, const ReplyParts& reply, FinishReason finish, const Usage& usage) {
    Json o = base(meta, "chat.completion");
    Json message = Json::object();
    message.set("role", "assistant");
    message.set("content", reply.answer);
    if (!reply.reasoning.empty()) message.set("reasoning_content", reply.reasoning);
    Json choice = Json::object();
    choice.set("index", 0);
    choice.set("message", std::move(message));
    choice.set("logprobs", Json());
    choice.set("finish_reason", finish_reason_json(finish));
    Json choices = Json::array();
    choices.push_back(std::move(choice));
    o.set("choices", std::move(choices));
    o.set("usage", usage_json(usage));
    return o;
}

Json chat_chunk_json(const ResponseMeta& meta, std::string_view role, std::string_view content,
                     const Json& finish_reason, bool with_usage_null, std::string_view reasoning) {
    Json o = base(meta, "chat.completion.chunk");
    Json delta = Json::object();
    if (!role.empty()) delta.set("role", role);
    if (!reasoning.empty()) delta.set("reasoning_content", reasoning);
    if (!role.empty() || !content.empty()) delta.set("content", content);
    Json choice = Json::object();
    choice.set("index", 0);
    choice.set("delta", std::move(delta));
    choice.set("logprobs", Json());
    choice.set("finish_reason", finish_reason);
    Json choices = Json::array();
    choices.push_back(std::move(choice));
    o.set("choices", std::move(choices));
    if (with_usage_null) o.set("usage", Json());
    return o;
}

Json chat_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
    Json o = base(meta, "chat.completion.chunk");
    o.set("choices", Json::array());
    o.set("usage", usage_json(usage));
    return o;
}

Json completion_json(const ResponseMeta& meta, Json choices, const Usage& usage) {
    Json o = base(meta, "text_completion");
    o.set("choices", std::move(choices));
    o.set("usage", usage_json(usage));
    return o;
}

Json completion_choice_json(size_t index, const std::string& text, const Json& finish_reason) {
    Json c = Json::object();
    c.set("text", text);
    c.set("index", uint64_t(index));
    c.set("logprobs", Json());
    c.set("finish_reason", finish_reason);
    return c;
}

Json completion_chunk_json(const ResponseMeta& meta, size_t index, std::string_view text,
                           const Json& finish_reason, bool with_usage_null) {
    Json o = base(meta, "text_completion");
    Json choices = Json::array();
    choices.push_back(completion_choice_json(index, std::string(text), finish_reason));
    o.set("choices", std::move(choices));
    if (with_usage_null) o.set("usage", Json());
    return o;
}

Json completion_usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
    Json o = base(meta, "text_completion");
    o.set("choices", Json::array());
    o.set("usage", usage_json(usage));
    return o;
}

Json model_json(const std::string& id, int64_t created) {
    Json o = Json::object();
    o.set("id", id);
    o.set("object", "model");
    o.set("created", created);
    o.set("owned_by", "arbor");
    return o;
}

std::string sse_event(const Json& data) {
    std::string out = "data: ";
    out += data.dump();
    out += "\n\n";
    return out;
}

} // namespace arbor::api
