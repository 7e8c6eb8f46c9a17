#include "api_test_fixture.h"

#include <condition_variable>
#include <mutex>

namespace arbor::test {

void ApiFixture::start(int32_t kv_tokens, api::ApiServerOptions options) {
    model = Model::load(model_path());
    chat = std::make_unique<ChatFormatter>(model->tokenizer(), detect_chat_template(model->chat_template_source()));
    EngineOptions eo;
    eo.backend.kv_tokens = kv_tokens;
    eo.backend.threads = 2;
    engine = std::make_unique<Engine>(*model, eo);
    options.port = 0;
    server = std::make_unique<api::ApiServer>(*engine, *model, options);
    server->start();
    model_id = server->model_id();
}

void ApiFixture::stop() {
    server.reset();
    engine.reset();
    chat.reset();
    model.reset();
}

static JsonReply to_json_reply(const std::optional<HttpResponse>& r) {
    JsonReply out;
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.http = *r;
    try {
        out.body = api::Json::parse(r->body);
    } catch (const std::exception&) {
    }
    return out;
}

JsonReply ApiFixture::post(const std::string& path, const api::Json& body, const std::vector<std::string>& headers) {
    return post_raw(path, body.dump(), headers);
}

JsonReply ApiFixture::post_raw(const std::string& path, const std::string& body, const std::vector<std::string>& headers) {
    auto h = headers;
    h.push_back("Content-Type: application/json");
    return to_json_reply(http_request(port(), "POST", path, body, h));
}

JsonReply ApiFixture::get(const std::string& path, const std::vector<std::string>& headers) {
    return to_json_reply(http_request(port(), "GET", path, {}, headers));
}

std::vector<std::string> ApiFixture::stream(const std::string& path, const api::Json& body, int* status) {
    auto r = http_request(port(), "POST", path, body.dump(), {"Content-Type: application/json"});
    if (status) *status = r ? r->status : 0;
    if (!r) return {"<no response>"};
    if (r->header("content-type") != "text/event-stream") return {"<not an event stream: " + r->body + ">"};
    return sse_payloads(r->body);
}

DirectRun ApiFixture::run_direct(std::vector<TokenId> prompt, const GenerateOptions& options) {
    // Shared with the sink, which may outlive this call if the wait times out.
    struct State {
        std::mutex m;
        std::condition_variable cv;
        DirectRun out;
        bool done = false;
    };
    auto state = std::make_shared<State>();
    Request req;
    req.prompt = std::move(prompt);
    req.options = options;
    engine->submit(std::move(req), [state](const Event& e) {
        std::lock_guard lock(state->m);
        if (e.kind == Event::Kind::Token) {
            if (e.token >= 0) state->out.tokens.push_back(e.token);
            state->out.text += e.text;
        } else if (e.kind == Event::Kind::Finished) {
            state->out.finish = e.finish;
            state->out.stats = e.stats;
            state->done = true;
            state->cv.notify_all();
        }
    });
    std::unique_lock lock(state->m);
    state->cv.wait_for(lock, std::chrono::seconds(120), [&] { return state->done; });
    return state->out;
}

std::vector<TokenId> ApiFixture::chat_prompt(const std::vector<std::pair<Role, std::string>>& messages) const {
    std::vector<ChatMessage> list;
    for (const auto& [role, text] : messages) list.push_back({role, chat->encode_content(text)});
    return chat->compose(list);
}

api::Json message(const char* role, const std::string& text) {
    api::Json m = api::Json::object();
    m.set("role", role);
    m.set("content", text);
    return m;
}

api::Json chat_body(const std::string& model, api::Json messages, int max_tokens) {
    api::Json b = api::Json::object();
    b.set("model", model);
    b.set("messages", std::move(messages));
    b.set("max_tokens", max_tokens);
    b.set("temperature", 0);
    return b;
}

} // namespace arbor::test
