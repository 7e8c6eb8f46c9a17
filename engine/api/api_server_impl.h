// Inside ApiServer: the HTTP handler with its routes. api_server.cpp holds routing,
// authentication, CORS and the small endpoints; completion_routes.cpp the two
// generating endpoints.
#pragma once

#include "api/api_error.h"
#include "api/cache_scope.h"
#include "api/api_server.h"
#include "api/generation.h"
#include "api/http_server.h"
#include "api/openai_request.h"
#include "api/reply_memory.h"
#include "api/request_guard.h"
#include "api/warning_limiter.h"
#include "arbor/chat_template.h"

#include <functional>
#include <optional>

namespace arbor::api {

// What one engine request produced, as gathered by ApiServer::Impl::drive.
struct ChoiceResult {
    std::string text;
    std::vector<TokenId> tokens;  // every sampled id, including a final end-of-turn id
    FinishReason finish = FinishReason::Stop;
    std::string error;
    RequestStats stats;
};

struct ApiServer::Impl final : HttpHandler {
    Impl(Engine& engine, const Model& model, ApiServerOptions options);

    void handle(const HttpRequest& request, ResponseWriter& out) override;
    void refuse(const HttpRequest& request, int status, const std::string& message, ResponseWriter& out) override;
    bool answers_at_once(const HttpRequest& request) const override;

    // Headers every response carries (content type aside): CORS for allowed origins.
    HttpHeaders common_headers(const HttpRequest& request) const;
    void send_json(const HttpRequest& request, ResponseWriter& out, int status, const Json& body);
    void send_error(const HttpRequest& request, ResponseWriter& out, const ApiError& error);
    bool authorized(const HttpRequest& request) const;
    // The request's prefix-cache namespace: from its bearer token and cache_salt.
    uint64_t cache_namespace(const HttpRequest& request, const SamplingRequest& sampling) const;
    // The body as a JSON object: 415 unless sent as application/json, 400 unless an object.
    Json parse_body(const HttpRequest& request) const;
    void check_model(const std::string& requested) const;
    void preflight(const HttpRequest& request, ResponseWriter& out);

    void chat_completions(const HttpRequest& request, ResponseWriter& out);
    void completions(const HttpRequest& request, ResponseWriter& out);

    // Engine request for a prompt: checks its length against the context and caps the
    // reply to the room left. `param` names the field blamed for a prompt too long.
    Request make_request(std::vector<TokenId> prompt, const SamplingRequest& sampling, const char* param,
                         uint64_t cache_namespace) const;
    // Runs the requests to the end, passing each new text piece to on_text (streaming;
    // returning false means the client is gone). nullopt: the client left or the server
    // is stopping, and everything was cancelled.
    std::optional<std::vector<ChoiceResult>> drive(Generation& generation, size_t count, ResponseWriter& out,
                                                   const std::function<bool(size_t, std::string_view)>& on_text);
    HttpHeaders stream_headers(const HttpRequest& request) const;
    // After drive() gave up: nothing when the client left; else (the server is stopping)
    // a 503, or for a stream a final error event and [DONE].
    void answer_abandoned(const HttpRequest& request, ResponseWriter& out, bool stream);

    Engine& engine;
    const Model& model;
    ApiServerOptions options;
    HostGuard host_guard;
    CacheScope cache_scope;
    std::string model_id;
    int64_t created;
    ChatFormatter chat;
    ReplyMemory replies;
    WarningLimiter warnings;  // server errors (5xx), at most one line per status per 10 s
    HttpServer http;
};

} // namespace arbor::api
