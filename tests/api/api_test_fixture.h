// Shared by the API suites that need the model: one Engine on the default model, an
// ApiServer on an ephemeral port, JSON requests over loopback, and the same requests
// run on the Engine directly for comparison.
#pragma once

#include "http_test_client.h"
#include "test_support.h"

#include "api/api_server.h"
#include "api/json.h"
#include "arbor/chat_template.h"
#include "arbor/engine.h"
#include "arbor/model.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace arbor::test {

struct JsonReply {
    int status = 0;
    api::Json body;           // null when the body was not JSON
    std::string raw;
    HttpResponse http;
};

// What the Engine produces for a request submitted directly.
struct DirectRun {
    std::vector<TokenId> tokens;
    std::string text;
    FinishReason finish = FinishReason::Error;
    RequestStats stats;
};

class ApiFixture {
public:
    // Loads the model and starts the engine (kv_tokens of KV) and a server.
    void start(int32_t kv_tokens = 4096, api::ApiServerOptions options = {});
    void stop();

    uint16_t port() const { return server->port(); }
    JsonReply post(const std::string& path, const api::Json& body, const std::vector<std::string>& headers = {});
    JsonReply post_raw(const std::string& path, const std::string& body, const std::vector<std::string>& headers = {});
    JsonReply get(const std::string& path, const std::vector<std::string>& headers = {});
    // A streamed request: the parsed "data:" payloads (the last one "[DONE]" when complete).
    std::vector<std::string> stream(const std::string& path, const api::Json& body, int* status = nullptr);

    DirectRun run_direct(std::vector<TokenId> prompt, const GenerateOptions& options);
    std::vector<TokenId> chat_prompt(const std::vector<std::pair<Role, std::string>>& messages) const;

    std::unique_ptr<Model> model;
    std::unique_ptr<ChatFormatter> chat;
    std::unique_ptr<Engine> engine;
    std::unique_ptr<api::ApiServer> server;
    std::string model_id;
};

// {"role": role, "content": text}
api::Json message(const char* role, const std::string& text);
// A chat request body with greedy sampling.
api::Json chat_body(const std::string& model, api::Json messages, int max_tokens);

} // namespace arbor::test
