// POST /v1/chat/completions and /v1/completions: prompt composition, the engine run,
// and the answer as one JSON object or as server-sent events.
#include "api/api_server_impl.h"

#include "api/chat_reply_split.h"
#include "api/openai_responses.h"

#include <chrono>
#include <ctime>

namespace arbor::api {
namespace {

using Clock = std::chrono::steady_clock;

ApiError engine_error(const std::string& message) {
    return ApiError(500, "generation failed: " + message, {}, "", "server_error");
}

ApiError stopping_error() { return ApiError(503, "the server is shutting down", {}, "", "server_error"); }

// Replies the server should answer with: an error or cancellation of any choice.
std::optional<ApiError> failure_of(const std::vector<ChoiceResult>& results) {
    for (const auto& r : results) {
        if (r.finish == FinishReason::Error) return engine_error(r.error);
        if (r.finish == FinishReason::Cancelled) return stopping_error();
    }
    return std::nullopt;
}

// Ends an SSE stream that cannot finish normally: an error event, then [DONE], so the
// client knows the reply is incomplete but the stream ended on purpose.
void end_stream_with_error(ResponseWriter& out, const ApiError& error) {
    out.write(sse_event(error.body()));
    out.write(kSseDone);
    out.end_stream();
}

} // namespace

void ApiServer::Impl::answer_abandoned(const HttpRequest& request, ResponseWriter& out, bool stream) {
    if (out.client_gone()) return;
    if (!stream) return send_error(request, out, stopping_error());
    end_stream_with_error(out, stopping_error());
}

Request ApiServer::Impl::make_request(std::vector<TokenId> prompt, const SamplingRequest& sampling, const char* param,
                                      uint64_t cache_namespace) const {
    const int64_t context = engine.context_size();
    if (prompt.empty()) throw ApiError(400, "the prompt is empty", param, "invalid_value");
    if (int64_t(prompt.size()) >= context)
        throw ApiError(400,
                       "this model's maximum context length is " + std::to_string(context) + " tokens; your " +
                           param + " resulted in " + std::to_string(prompt.size()) + " tokens",
                       param, "context_length_exceeded");
    Request r;
    r.options = sampling.options;
    const int64_t room = context - int64_t(prompt.size());
    r.options.max_tokens = int32_t(sampling.max_tokens ? std::min(*sampling.max_tokens, room) : room);
    r.prompt = std::move(prompt);
    r.cache_namespace = cache_namespace;
    return r;
}

HttpHeaders ApiServer::Impl::stream_headers(const HttpRequest& request) const {
    auto headers = common_headers(request);
    headers.emplace_back("Content-Type", "text/event-stream");
    headers.emplace_back("Cache-Control", "no-cache");
    headers.emplace_back("X-Accel-Buffering", "no");
    return headers;
}

std::optional<std::vector<ChoiceResult>> ApiServer::Impl::drive(
    Generation& generation, size_t count, ResponseWriter& out,
    const std::function<bool(size_t, std::string_view)>& on_text) {
    std::vector<ChoiceResult> results(count);
    auto next_check = Clock::now();
    while (!generation.finished()) {
        const auto updates = generation.wait(std::chrono::milliseconds(100));
        for (const auto& u : updates) {
            ChoiceResult& r = results[u.index];
            const Event& e = u.event;
            r.stats = e.stats;
            if (e.kind == Event::Kind::Finished) {
                r.finish = e.finish;
                r.error = e.error;
                continue;
            }
            if (e.token >= 0) r.tokens.push_back(e.token);
            if (e.text.empty()) continue;
            r.text += e.text;
            if (on_text && !on_text(u.index, e.text)) {
                generation.cancel();
                return std::nullopt;
            }
        }
        // A client that left (or a server that stops) cancels the work, also while no
        // byte is being written (a long prefill, a non-streamed reply).
        if (Clock::now() >= next_check) {
            next_check = Clock::now() + std::chrono::milliseconds(100);
            if (http.stopping() || out.client_gone()) {
                generation.cancel();
                return std::nullopt;
            }
        }
    }
    return results;
}

void ApiServer::Impl::chat_completions(const HttpRequest& request, ResponseWriter& out) {
    const ChatRequest req = parse_chat_request(parse_body(request));
    check_model(req.sampling.model);
    const uint64_t ns = cache_namespace(request, req.sampling);
    std::vector<ChatMessage> messages;
    messages.reserve(req.messages.size());
    for (const auto& turn : req.messages) {
        std::optional<std::vector<TokenId>> ids;
        if (turn.role == Role::Assistant) ids = replies.recall(turn.text, ns);
        messages.push_back({turn.role, ids ? std::move(*ids) : chat.encode_content(turn.text)});
    }
    std::vector<TokenId> prompt;
    if (req.tools.is_undefined()) {
        prompt = chat.compose(messages);
    } else {
        try {
            prompt = chat.compose_with_tools(messages, req.tools);
        } catch (const Error& e) {
            throw ApiError(400, std::string("tools cannot be used with this model: ") + e.what(), "tools",
                           "unsupported_parameter");
        }
    }
    ChatReplySplit split(prompt_opens_think(model.tokenizer(), prompt));
    Request engine_request = make_request(std::move(prompt), req.sampling, "messages", ns);
    const ResponseMeta meta{new_response_id("chatcmpl-"), int64_t(std::time(nullptr)), model_id};
    const bool stream = req.sampling.stream, usage_chunk = req.sampling.include_usage;

    std::vector<Request> list;
    list.push_back(std::move(engine_request));
    Generation generation(engine, std::move(list));
    std::function<bool(size_t, std::string_view)> on_text;
    if (stream) {
        if (!out.begin_stream(200, stream_headers(request)) ||
            !out.write(sse_event(chat_chunk_json(meta, "assistant", "", Json(), usage_chunk))))
            return;
        on_text = [&](size_t, std::string_view piece) { return write_chat_delta(out, meta, split.add(piece), usage_chunk); };
    }
    auto results = drive(generation, 1, out, on_text);
    if (!results) return answer_abandoned(request, out, stream);
    const ChoiceResult& r = (*results)[0];
    Usage usage;
    usage.add(r.stats);
    if (auto failure = failure_of(*results)) {
        if (!stream) return send_error(request, out, *failure);
        return end_stream_with_error(out, *failure);
    }
    if (!stream) split.add(r.text);  // the whole reply at once (a stream added it piece by piece)
    const ChatReplySplit::Delta held_back = split.finish();
    const ReplyParts& parts = split.parts();
    // Remember the ids only when they spell exactly the text generated (a stop string
    // cuts the text short of the ids). Clients send a reply back as its content, the
    // answer alone (some with reasoning_content beside it, which is not read), so the
    // answer recalls the whole reply's ids too. Those ids, reasoning and all, then stand
    // for the turn in the prompt: composed in pieces or by compose_with_tools they take
    // the content's place (the template renders a placeholder), so a template that drops
    // the reasoning of earlier turns (Qwen3's) sees no "</think>" to cut at: the follow-up
    // prompt is the previous prompt and the model's exact reply, as the prefix cache holds
    // them. (gpt-oss rendered whole keeps a reply's ids from its final message on, as its
    // template does; chat_template.h.)
    std::vector<TokenId> spoken = r.tokens;
    if (!spoken.empty() && model.tokenizer().is_end_of_generation(spoken.back())) spoken.pop_back();
    if (model.tokenizer().decode(spoken) == r.text)
        for (const auto& text : reply_recall_texts(r.text, parts)) replies.remember(text, r.tokens, ns);

    if (!stream) return send_json(request, out, 200, chat_completion_json(meta, parts, r.finish, usage));
    write_chat_delta(out, meta, held_back, usage_chunk);
    out.write(sse_event(chat_chunk_json(meta, "", "", finish_reason_json(r.finish), usage_chunk)));
    if (usage_chunk) out.write(sse_event(chat_usage_chunk_json(meta, usage)));
    out.write(kSseDone);
    out.end_stream();
}

void ApiServer::Impl::completions(const HttpRequest& request, ResponseWriter& out) {
    const CompletionRequest req = parse_completion_request(parse_body(request), model.config().n_vocab);
    check_model(req.sampling.model);
    const Tokenizer& tok = model.tokenizer();
    const uint64_t ns = cache_namespace(request, req.sampling);
    std::vector<Request> list;
    for (const auto& p : req.prompts)
        list.push_back(make_request(p.is_ids ? p.ids : tok.encode(p.text, tok.adds_bos(), true), req.sampling, "prompt", ns));
    const size_t count = list.size();
    const ResponseMeta meta{new_response_id("cmpl-"), int64_t(std::time(nullptr)), model_id};
    const bool stream = req.sampling.stream, usage_chunk = req.sampling.include_usage;

    Generation generation(engine, std::move(list));
    std::function<bool(size_t, std::string_view)> on_text;
    if (stream) {
        if (!out.begin_stream(200, stream_headers(request))) return;
        on_text = [&](size_t index, std::string_view piece) {
            return out.write(sse_event(completion_chunk_json(meta, index, piece, Json(), usage_chunk)));
        };
    }
    auto results = drive(generation, count, out, on_text);
    if (!results) return answer_abandoned(request, out, stream);
    Usage usage;
    for (const auto& r : *results) usage.add(r.stats);
    if (auto failure = failure_of(*results)) {
        if (!stream) return send_error(request, out, *failure);
        return end_stream_with_error(out, *failure);
    }
    if (!stream) {
        Json choices = Json::array();
        for (size_t i = 0; i < count; ++i)
            choices.push_back(completion_choice_json(i, (*results)[i].text, finish_reason_json((*results)[i].finish)));
        return send_json(request, out, 200, completion_json(meta, std::move(choices), usage));
    }
    for (size_t i = 0; i < count; ++i)
        out.write(sse_event(completion_chunk_json(meta, i, "", finish_reason_json((*results)[i].finish), usage_chunk)));
    if (usage_chunk) out.write(sse_event(completion_usage_chunk_json(meta, usage)));
    out.write(kSseDone);
    out.end_stream();
}

} // namespace arbor::api
