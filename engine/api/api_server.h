// The local OpenAI-compatible API over one Engine:
//   GET  /health                 {"status": "ok"} (no key needed)
//   GET  /v1/models              the loaded model (id: its file name without .gguf)
//   GET  /v1/models/{id}
//   POST /v1/chat/completions    roles system/user/assistant; streamed as SSE or not
//   POST /v1/completions         prompt: a string, a list of strings, or token ids
// Requests must name this server in their Host and send POST bodies as application/json
// (see request_guard.h). Errors use OpenAI's body ({"error": {"message", "type", "param", "code"}}). The
// server borrows the Engine and the Model: the app and the headless arbor-server both
// own them and may use the engine for other work at the same time.
#pragma once

#include "arbor/chat_template.h"
#include "arbor/engine.h"
#include "arbor/model.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace arbor::api {

struct ApiServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;                      // 0: any free port (see ApiServer::port())
    std::string api_key;                       // empty: no key required
    // Host names answered besides localhost, 127.0.0.1, [::1] and `host` (any IP address
    // when `host` is a wildcard); others get 421. "*" answers any (unsafe: DNS rebinding).
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> allowed_origins;  // CORS; "*" allows any origin; empty: none
    std::string model_id;                      // empty: the model file's name without .gguf
    size_t max_body_bytes = 4u << 20;          // larger bodies are refused with 413
    // Open connections (see HttpServerOptions: idle ones make room for new ones) and
    // generating requests at once; past either limit a request is answered 503.
    int max_connections = 1024;
    int max_active_requests = 64;
    size_t reply_memory_entries = 512;         // assistant replies remembered by text
    // Whether API requests share the prefix cache with the app's conversations (and so
    // may learn what they hold); by default each API key, and all clients without one,
    // get namespaces of their own (see cache_scope.h).
    bool share_app_cache = false;
    // Where the key of those namespaces is kept across restarts (namespace_key.h); empty:
    // arbor::api_namespace_key_file().
    std::filesystem::path namespace_key_file;
};

class ApiServer {
public:
    // engine and model must outlive the server; engine must serve model.
    ApiServer(Engine& engine, const Model& model, ApiServerOptions options = {});
    ~ApiServer();  // stop()
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    // Starts listening. Throws arbor::Error when the address cannot be used.
    void start();
    // Cancels what clients are waiting for, closes connections, joins their threads.
    void stop();
    uint16_t port() const;
    const std::string& model_id() const;
    // How prompts are composed from messages (the model's own chat template or a fallback).
    const ChatFormatter& chat_formatter() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

// The model id of a GGUF path: its file name without the .gguf extension.
std::string model_id_from_path(const std::string& path);

} // namespace arbor::api
