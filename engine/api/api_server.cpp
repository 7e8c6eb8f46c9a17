#include "api/api_server_impl.h"

#include "api/openai_responses.h"
#include "arbor/paths.h"

#include <ctime>
#include <filesystem>
#include <spdlog/spdlog.h>

namespace arbor::api {
namespace {

HttpServerOptions http_options(const ApiServerOptions& o) {
    HttpServerOptions h;
    h.host = o.host;
    h.port = o.port;
    h.max_body_bytes = o.max_body_bytes;
    h.max_connections = o.max_connections;
    h.max_active_requests = o.max_active_requests;
    return h;
}

// Compares in time independent of where the strings differ.
bool same_secret(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    return diff == 0;
}

CacheScope cache_scope_of(const ApiServerOptions& o) {
    const auto loaded = load_or_create_namespace_key(o.namespace_key_file.empty() ? api_namespace_key_file()
                                                                                  : o.namespace_key_file);
    if (!loaded.warning.empty()) spdlog::warn("{}", loaded.warning);
    return CacheScope(o.share_app_cache, loaded.key);
}

const char* const kModelsPrefix = "/v1/models/";

bool is_generating_route(const std::string& path) { return path == "/v1/chat/completions" || path == "/v1/completions"; }

// The token of an "Authorization: Bearer TOKEN" header (scheme case-insensitive).
std::optional<std::string_view> bearer_token(const HttpRequest& request) {
    const std::string* auth = request.header("authorization");
    if (!auth || auth->size() < 7) return std::nullopt;
    std::string scheme = auth->substr(0, 7);
    for (char& c : scheme) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "bearer ") return std::nullopt;
    return std::string_view(*auth).substr(7);
}

} // namespace

std::string model_id_from_path(const std::string& path) {
    std::filesystem::path p(path);
    std::string name = p.filename().string();
    const std::string ext = ".gguf";
    if (name.size() > ext.size()) {
        std::string tail = name.substr(name.size() - ext.size());
        for (char& c : tail) c = char(std::tolower(static_cast<unsigned char>(c)));
        if (tail == ext) name.resize(name.size() - ext.size());
    }
    return name;
}

ApiServer::Impl::Impl(Engine& e, const Model& m, ApiServerOptions o)
    : engine(e), model(m), options(std::move(o)), host_guard(options.host, options.allowed_hosts),
      cache_scope(cache_scope_of(options)),
      model_id(options.model_id.empty() ? model_id_from_path(m.file().path().string()) : options.model_id),
      created(int64_t(std::time(nullptr))), chat(m.tokenizer(), m.chat_template_source()),
      replies(options.reply_memory_entries), http(http_options(options), *this) {}

HttpHeaders ApiServer::Impl::common_headers(const HttpRequest& request) const {
    HttpHeaders h;
    const std::string* origin = request.header("origin");
    if (!origin || options.allowed_origins.empty()) return h;
    for (const auto& allowed : options.allowed_origins) {
        if (allowed == "*") {
            h.emplace_back("Access-Control-Allow-Origin", "*");
            return h;
        }
        if (allowed == *origin) {
            h.emplace_back("Access-Control-Allow-Origin", *origin);
            h.emplace_back("Vary", "Origin");
            return h;
        }
    }
    return h;
}

void ApiServer::Impl::send_json(const HttpRequest& request, ResponseWriter& out, int status, const Json& body) {
    auto headers = common_headers(request);
    headers.emplace_back("Content-Type", "application/json");
    out.send(status, headers, body.dump());
}

void ApiServer::Impl::send_error(const HttpRequest& request, ResponseWriter& out, const ApiError& error) {
    if (error.status >= 500)
        warnings.warn(std::to_string(error.status), "api: " + request.method + " " + request.path + ": " + error.what());
    auto headers = common_headers(request);
    headers.emplace_back("Content-Type", "application/json");
    if (error.status == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
    out.send(error.status, headers, error.body().dump());
}

void ApiServer::Impl::refuse(const HttpRequest& request, int status, const std::string& message, ResponseWriter& out) {
    const char* code = status == 413 ? "request_too_large" : nullptr;
    send_error(request, out, ApiError(status, message, {}, code ? code : "", status >= 500 ? "server_error" : "invalid_request_error"));
}

bool ApiServer::Impl::authorized(const HttpRequest& request) const {
    if (options.api_key.empty()) return true;
    const auto token = bearer_token(request);
    return token && same_secret(*token, options.api_key);
}

uint64_t ApiServer::Impl::cache_namespace(const HttpRequest& request, const SamplingRequest& sampling) const {
    std::optional<std::string_view> token = bearer_token(request);
    if (token && token->empty()) token.reset();
    std::optional<std::string_view> salt;
    if (sampling.cache_salt) salt = *sampling.cache_salt;
    return cache_scope.namespace_for(token, salt);
}

Json ApiServer::Impl::parse_body(const HttpRequest& request) const {
    if (auto error = check_json_content_type(request)) throw *error;
    try {
        JsonParseLimits limits;
        limits.max_bytes = options.max_body_bytes;
        Json body = Json::parse(request.body, limits);
        if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
        return body;
    } catch (const JsonError& e) {
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), {}, "invalid_json");
    }
}

void ApiServer::Impl::check_model(const std::string& requested) const {
    if (requested != model_id)
        throw ApiError(404, "the model '" + requested + "' does not exist; this server serves '" + model_id + "'",
                       "model", "model_not_found");
}

void ApiServer::Impl::preflight(const HttpRequest& request, ResponseWriter& out) {
    auto headers = common_headers(request);
    if (!headers.empty()) {
        headers.emplace_back("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        const std::string* wanted = request.header("access-control-request-headers");
        headers.emplace_back("Access-Control-Allow-Headers", wanted ? *wanted : "Authorization, Content-Type");
        headers.emplace_back("Access-Control-Max-Age", "600");
    }
    headers.emplace_back("Allow", "GET, POST, OPTIONS");
    out.send(204, headers, {});
}

bool ApiServer::Impl::answers_at_once(const HttpRequest& request) const {
    // Only the generating routes wait (on the engine) or parse a large body.
    return !(request.method == "POST" && is_generating_route(request.path));
}

void ApiServer::Impl::handle(const HttpRequest& request, ResponseWriter& out) {
    const std::string& path = request.path;
    const bool is_models_item = path.rfind(kModelsPrefix, 0) == 0 && path.size() > std::string_view(kModelsPrefix).size();
    const char* allowed = nullptr;  // methods of a known path
    if (path == "/health" || path == "/v1/models" || is_models_item) allowed = "GET";
    else if (is_generating_route(path)) allowed = "POST";
    try {
        if (auto error = host_guard.check(request)) throw *error;
        if (!allowed)
            throw ApiError(404, "unknown request URL: " + request.method + " " + path, {}, "unknown_url");
        if (request.method == "OPTIONS") return preflight(request, out);
        if (request.method != allowed) {
            auto headers = common_headers(request);
            headers.emplace_back("Content-Type", "application/json");
            headers.emplace_back("Allow", std::string(allowed) + ", OPTIONS");
            ApiError e(405, "method " + request.method + " is not allowed on " + path + "; use " + allowed, {},
                       "method_not_allowed");
            out.send(405, headers, e.body().dump());
            return;
        }
        if (path == "/health") {
            Json ok = Json::object();
            ok.set("status", "ok");
            return send_json(request, out, 200, ok);
        }
        if (!authorized(request))
            throw ApiError(401, "incorrect or missing API key; send it as 'Authorization: Bearer KEY'", {}, "invalid_api_key");
        if (path == "/v1/models") {
            Json list = Json::object();
            list.set("object", "list");
            Json data = Json::array();
            data.push_back(model_json(model_id, created));
            list.set("data", std::move(data));
            return send_json(request, out, 200, list);
        }
        if (is_models_item) {
            check_model(path.substr(std::string_view(kModelsPrefix).size()));
            return send_json(request, out, 200, model_json(model_id, created));
        }
        if (path == "/v1/chat/completions") return chat_completions(request, out);
        return completions(request, out);
    } catch (const ApiError& e) {
        if (!out.started()) send_error(request, out, e);
    } catch (const Error& e) {
        if (!out.started()) send_error(request, out, ApiError(400, e.what()));
    }
}

ApiServer::ApiServer(Engine& engine, const Model& model, ApiServerOptions options)
    : impl_(std::make_unique<Impl>(engine, model, std::move(options))) {}

ApiServer::~ApiServer() { stop(); }

void ApiServer::start() { impl_->http.start(); }

void ApiServer::stop() { impl_->http.stop(); }

uint16_t ApiServer::port() const { return impl_->http.port(); }

const std::string& ApiServer::model_id() const { return impl_->model_id; }
const ChatFormatter& ApiServer::chat_formatter() const { return impl_->chat; }

} // namespace arbor::api
