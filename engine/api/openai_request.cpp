#include "api/openai_request.h"

#include "api/api_error.h"

#include <cstdint>
#include <random>

namespace arbor::api {
namespace {

// A member that is present and not null.
const Json* field(const Json& body, const char* name) {
    const Json* v = body.find(name);
    return v && !v->is_null() ? v : nullptr;
}

double number_in(const Json& body, const char* name, double lo, double hi, double fallback) {
    const Json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_number()) throw invalid_param(name, std::string("'") + name + "' must be a number");
    const double x = v->as_double();
    if (!(x >= lo && x <= hi))
        throw invalid_param(name, std::string("'") + name + "' must be between " + Json(lo).dump() + " and " +
                                      Json(hi).dump() + "; got " + v->dump());
    return x;
}

std::optional<int64_t> integer(const Json& body, const char* name, int64_t lo, int64_t hi) {
    const Json* v = field(body, name);
    if (!v) return std::nullopt;
    const auto i = v->as_integer();
    if (!i) throw invalid_param(name, std::string("'") + name + "' must be an integer");
    if (*i < lo || *i > hi)
        throw invalid_param(name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " +
                                      std::to_string(hi) + "; got " + std::to_string(*i));
    return i;
}

bool boolean(const Json& body, const char* name) {
    const Json* v = field(body, name);
    if (!v) return false;
    if (!v->is_bool()) throw invalid_param(name, std::string("'") + name + "' must be a boolean");
    return v->as_bool();
}

void refuse_unsupported(const Json& body) {
    if (auto n = integer(body, "n", 1, 128); n && *n != 1)
        throw ApiError(400, "only n=1 is supported", "n", "unsupported_value");
    if (auto n = integer(body, "best_of", 1, 128); n && *n != 1)
        throw ApiError(400, "only best_of=1 is supported", "best_of", "unsupported_value");
    if (const Json* lp = field(body, "logprobs"); lp && !(lp->is_bool() && !lp->as_bool()))
        throw ApiError(400, "logprobs are not supported", "logprobs", "unsupported_parameter");
    if (const Json* rf = field(body, "response_format")) {
        const Json* type = rf->find("type");
        if (!type || !type->is_string() || type->as_string() != "text")
            throw ApiError(400, "only the 'text' response format is supported", "response_format",
                           "unsupported_parameter");
    }
}

SamplingRequest parse_sampling(const Json& body) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    SamplingRequest r;
    const Json* model = body.find("model");
    if (!model) throw ApiError(400, "you must provide a model parameter", "model", "missing_required_parameter");
    if (!model->is_string()) throw invalid_param("model", "'model' must be a string");
    r.model = model->as_string();
    refuse_unsupported(body);

    SamplerParams& s = r.options.sampler;
    s.temperature = float(number_in(body, "temperature", 0.0, 2.0, s.temperature));
    s.top_p = float(number_in(body, "top_p", 0.0, 1.0, s.top_p));
    if (field(body, "top_p") && s.top_p <= 0.0f) throw invalid_param("top_p", "'top_p' must be greater than 0");
    s.top_k = int(integer(body, "top_k", 0, 1 << 20).value_or(s.top_k));
    s.min_p = float(number_in(body, "min_p", 0.0, 1.0, s.min_p));
    s.presence_penalty = float(number_in(body, "presence_penalty", -2.0, 2.0, s.presence_penalty));
    s.frequency_penalty = float(number_in(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
    s.repetition_penalty = float(number_in(body, "repeat_penalty", 0.01, 10.0, s.repetition_penalty));
    if (auto seed = integer(body, "seed", INT64_MIN, INT64_MAX)) {
        s.seed = uint64_t(*seed);
    } else {
        std::random_device rd;
        s.seed = (uint64_t(rd()) << 32) ^ rd();
    }

    const auto max_tokens = integer(body, "max_tokens", 1, INT32_MAX);
    const auto max_completion = integer(body, "max_completion_tokens", 1, INT32_MAX);
    r.max_tokens = max_completion ? max_completion : max_tokens;

    if (const Json* stop = field(body, "stop")) {
        auto add = [&](const Json& v) {
            if (!v.is_string()) throw invalid_param("stop", "'stop' must be a string or a list of strings");
            if (!v.as_string().empty()) r.options.stop_strings.push_back(v.as_string());
        };
        if (stop->is_array()) {
            if (stop->as_array().size() > 4) throw invalid_param("stop", "'stop' may hold at most 4 strings");
            for (const Json& v : stop->as_array()) add(v);
        } else {
            add(*stop);
        }
    }

    if (const Json* salt = field(body, "cache_salt")) {
        if (!salt->is_string() || salt->as_string().empty())
            throw invalid_param("cache_salt", "'cache_salt' must be a non-empty string");
        r.cache_salt = salt->as_string();
    }

    r.stream = boolean(body, "stream");
    if (const Json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw invalid_param("stream_options", "'stream_options' must be an object");
        if (!r.stream)
            throw invalid_param("stream_options", "'stream_options' is only allowed when 'stream' is true");
        r.include_usage = boolean(*so, "include_usage");
    }
    return r;
}

std::string message_text(const Json& content, size_t i) {
    const std::string param = "messages[" + std::to_string(i) + "].content";
    if (content.is_string()) return content.as_string();
    if (!content.is_array()) throw invalid_param(param, "'" + param + "' must be a string or a list of text parts");
    std::string text;
    for (const Json& part : content.as_array()) {
        const Json* type = part.find("type");
        const Json* t = part.find("text");
        if (!type || !type->is_string() || type->as_string() != "text" || !t || !t->is_string())
            throw invalid_param(param, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported");
        text += t->as_string();
    }
    return text;
}

int32_t token_id(const Json& v, int32_t n_vocab) {
    const auto i = v.as_integer();
    if (!i || *i < 0 || *i >= n_vocab)
        throw invalid_param("prompt", "token ids in 'prompt' must be integers from 0 to " + std::to_string(n_vocab - 1));
    return int32_t(*i);
}

// A JSON value as a chat template sees it (objects keep their members' order, as Python's
// dicts do for tojson).
jinja::Value template_value(const Json& v) {
    switch (v.type()) {
    case Json::Type::Null: return jinja::Value(nullptr);
    case Json::Type::Bool: return jinja::Value(v.as_bool());
    case Json::Type::Number: {
        if (const auto i = v.as_integer()) return jinja::Value(*i);
        return jinja::Value(v.as_double());
    }
    case Json::Type::String: return jinja::Value(v.as_string());
    case Json::Type::Array: {
        jinja::Array a;
        for (const Json& item : v.as_array()) a.push_back(template_value(item));
        return jinja::Value(std::move(a));
    }
    case Json::Type::Object: {
        jinja::Object o;
        for (const auto& [key, member] : v.as_object()) o.emplace_back(key, template_value(member));
        return jinja::Value(std::move(o));
    }
    }
    return jinja::Value();
}

// The request's tools for the template: undefined when there are none or tool_choice is
// "none".
jinja::Value parse_tools(const Json& body) {
    const Json* tools = field(body, "tools");
    if (const Json* choice = field(body, "tool_choice")) {
        if (!choice->is_string() || (choice->as_string() != "auto" && choice->as_string() != "none"))
            throw ApiError(400, "only tool_choice 'auto' and 'none' are supported", "tool_choice", "unsupported_value");
        if (choice->as_string() == "none") return jinja::Value();
    }
    if (!tools) return jinja::Value();
    if (!tools->is_array()) throw invalid_param("tools", "'tools' must be a list of tools");
    for (size_t i = 0; i < tools->as_array().size(); ++i) {
        const std::string at = "tools[" + std::to_string(i) + "]";
        const Json& t = tools->as_array()[i];
        const Json* type = t.find("type");
        const Json* function = t.find("function");
        const Json* name = function ? function->find("name") : nullptr;
        if (!type || !type->is_string() || type->as_string() != "function" || !function || !function->is_object() ||
            !name || !name->is_string() || name->as_string().empty())
            throw invalid_param(at, "'" + at + "' must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    if (tools->as_array().empty()) return jinja::Value();
    return template_value(*tools);
}

} // namespace

ChatRequest parse_chat_request(const Json& body) {
    ChatRequest r;
    r.sampling = parse_sampling(body);
    const Json* messages = body.find("messages");
    if (!messages) throw ApiError(400, "you must provide a messages parameter", "messages", "missing_required_parameter");
    if (!messages->is_array() || messages->as_array().empty())
        throw invalid_param("messages", "'messages' must be a non-empty list of messages");
    const auto& list = messages->as_array();
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string at = "messages[" + std::to_string(i) + "]";
        const Json& m = list[i];
        if (!m.is_object()) throw invalid_param(at, "'" + at + "' must be an object");
        const Json* role = m.find("role");
        if (!role || !role->is_string()) throw invalid_param(at + ".role", "'" + at + ".role' must be a string");
        ChatTurn turn;
        const std::string& name = role->as_string();
        if (name == "system" || name == "developer") turn.role = Role::System;
        else if (name == "user") turn.role = Role::User;
        else if (name == "assistant") turn.role = Role::Assistant;
        else
            throw invalid_param(at + ".role", "'" + at + ".role' must be 'system', 'user' or 'assistant'; got '" + name + "'");
        const Json* content = m.find("content");
        if (!content || (content->is_null() && turn.role != Role::Assistant))
            throw ApiError(400, "'" + at + ".content' is required", at + ".content", "missing_required_parameter");
        if (!content->is_null()) turn.text = message_text(*content, i);
        r.messages.push_back(std::move(turn));
    }
    r.tools = parse_tools(body);
    return r;
}

CompletionRequest parse_completion_request(const Json& body, int32_t n_vocab) {
    CompletionRequest r;
    r.sampling = parse_sampling(body);
    if (const Json* echo = field(body, "echo"); echo && !(echo->is_bool() && !echo->as_bool()))
        throw ApiError(400, "echo is not supported", "echo", "unsupported_parameter");
    if (const Json* suffix = field(body, "suffix"); suffix && !(suffix->is_string() && suffix->as_string().empty()))
        throw ApiError(400, "suffix is not supported", "suffix", "unsupported_parameter");
    const Json* prompt = body.find("prompt");
    if (!prompt) throw ApiError(400, "you must provide a prompt parameter", "prompt", "missing_required_parameter");
    const auto bad = [] { return invalid_param("prompt", "'prompt' must be a string, a list of strings, or token ids"); };
    if (prompt->is_string()) {
        r.prompts.push_back({prompt->as_string(), {}, false});
    } else if (prompt->is_array() && !prompt->as_array().empty()) {
        const auto& items = prompt->as_array();
        if (items[0].is_number()) {
            PromptInput p;
            p.is_ids = true;
            for (const Json& v : items) p.ids.push_back(token_id(v, n_vocab));
            r.prompts.push_back(std::move(p));
        } else {
            if (items.size() > 64) throw invalid_param("prompt", "'prompt' may hold at most 64 prompts");
            for (const Json& item : items) {
                if (item.is_string()) {
                    r.prompts.push_back({item.as_string(), {}, false});
                } else if (item.is_array() && !item.as_array().empty()) {
                    PromptInput p;
                    p.is_ids = true;
                    for (const Json& v : item.as_array()) p.ids.push_back(token_id(v, n_vocab));
                    r.prompts.push_back(std::move(p));
                } else {
                    throw bad();
                }
            }
        }
    } else {
        throw bad();
    }
    return r;
}

} // namespace arbor::api
