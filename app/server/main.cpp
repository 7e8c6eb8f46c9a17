// arbor-server: the OpenAI-compatible API over one engine, without the app.
#include "server_args.h"

#include "api/api_server.h"
#include "arbor/engine.h"
#include "arbor/error.h"
#include "arbor/load_warnings.h"
#include "arbor/model.h"
#include "arbor/paths.h"

#include <cstdint>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <pthread.h>

namespace {

int serve(const arbor::server::ServerArgs& args) {
    const std::string path = args.model.empty() ? arbor::default_model_path().string() : args.model;
    std::error_code ec;
    if (args.model.empty() && !std::filesystem::exists(path, ec))
        throw arbor::Error("model file not found: " + path + "; " + std::string(arbor::kDefaultModelInstallHint));
    auto model = arbor::Model::load(path);
    arbor::EngineOptions eo;
    eo.backend.threads = args.threads;
    eo.backend.device = args.device;
    eo.backend.kv_type = args.kv_type;
    eo.backend.int8_activations = args.int8_activations;
    eo.backend.kv_budget_bytes = size_t(args.kv_mib) << 20;
    eo.kv_disk_bytes = uint64_t(args.kv_disk_mib) << 20;
    eo.kv_disk_dir = args.kv_disk_dir;
    arbor::Engine engine(*model, eo);
    arbor::api::ApiServer server(engine, *model, args.api);
    server.start();
    const std::string& host = args.api.host;
    const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;  // IPv6
    for (const std::string& warning : arbor::model_load_warnings(*model, server.chat_formatter()))
        std::fprintf(stderr, "arbor-server: warning: %s\n", warning.c_str());
    if (!engine.device_fallback().empty())
        std::printf("arbor-server: no GPU used: %s\n", engine.device_fallback().c_str());
    std::printf("arbor-server: serving %s on http://%s:%u (context %d tokens, %s)%s\n", server.model_id().c_str(),
                shown.c_str(), unsigned(server.port()), engine.context_size(), engine.device().c_str(),
                args.api.api_key.empty() ? "" : ", API key required");
    std::fflush(stdout);

    // SIGINT and SIGTERM are blocked in every thread (see main) and taken here.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    int sig = 0;
    sigwait(&signals, &sig);
    std::printf("arbor-server: %s received, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    std::fflush(stdout);
    server.stop();
    engine.shutdown();
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    // Blocked before any thread starts, so every thread inherits the mask and only
    // sigwait in serve() receives them.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    spdlog::set_default_logger(spdlog::stderr_color_mt("arbor"));
    spdlog::set_level(spdlog::level::warn);
    try {
        const auto args = arbor::server::parse_server_args(std::vector<std::string>(argv + 1, argv + argc));
        if (args.help) {
            std::fputs(arbor::server::kServerUsage, stdout);
            return 0;
        }
        for (const auto& warning : args.warnings) std::fprintf(stderr, "arbor-server: warning: %s\n", warning.c_str());
        if (args.verbose) spdlog::set_level(spdlog::level::info);
        return serve(args);
    } catch (const arbor::server::ServerUsageError& e) {
        std::fprintf(stderr, "arbor-server: %s\n%s", e.what(), arbor::server::kServerUsage);
        return 2;
    } catch (const arbor::Error& e) {
        std::fprintf(stderr, "arbor-server: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "arbor-server: internal error: %s\n", e.what());
        return 1;
    }
}
