#include "cli_common.h"

#include "arbor/error.h"
#include "arbor/paths.h"

#include <cstdint>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>

namespace arbor::cli {

std::set<std::string> model_options() { return {"--model", "-m", "--threads", "-t", "--ctx", "--device", "--kv-type"}; }

std::set<std::string> sampling_options() {
    return {"--temp", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--seed"};
}

std::filesystem::path model_path(const CliArgs& args) {
    const std::filesystem::path path = args.get("--model").value_or(args.get("-m").value_or(default_model_path().string()));
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw Error("model file not found: " + path.string() +
                    (args.has("--model") || args.has("-m") ? "" : "; " + std::string(kDefaultModelInstallHint)));
    return path;
}

LoadedModel load_model(const CliArgs& args, bool with_engine) {
    const std::filesystem::path path = model_path(args);
    LoadedModel out;
    out.model = Model::load(path);
    for (const std::string& warning : {out.model->config().load_warning, out.model->tokenizer().load_warning()})
        if (!warning.empty()) std::fprintf(stderr, "arbor-cli: warning: %s\n", warning.c_str());
    if (with_engine) {
        EngineOptions engine_options;
        BackendOptions& options = engine_options.backend;
        options.threads = int(args.get_int("--threads", args.get_int("-t", 0, 0, 1024), 0, 1024));
        options.kv_tokens = int32_t(args.get_int("--ctx", 4096, 16, 1 << 20));
        options.device = args.get("--device").value_or("auto");
        const std::string kv_type = args.get("--kv-type").value_or("f16");
        const std::optional<KvType> type = kv_type_from_name(kv_type);
        if (!type) throw Error("--kv-type expects f16, f32 or q8_0, not '" + kv_type + "'");
        options.kv_type = *type;
        options.int8_activations = args.has("--int8-activations");
        out.engine = std::make_unique<Engine>(*out.model, engine_options);
        const std::string& fallback = out.engine->device_fallback();
        if (!fallback.empty() && args.has("--device")) spdlog::warn("no GPU used: {}", fallback);
    }
    return out;
}

GenerateResult print_reply(Engine& engine, Request request) {
    GenerateResult result = generate(engine, std::move(request), [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
    });
    if (result.finish == FinishReason::Error) throw Error(result.error);
    return result;
}

SamplerParams sampler_params(const CliArgs& args, float default_temperature) {
    SamplerParams p;
    p.temperature = float(args.get_double("--temp", default_temperature, 0.0, 100.0));
    p.top_k = int(args.get_int("--top-k", p.top_k, 0, 1 << 30));
    p.top_p = float(args.get_double("--top-p", p.top_p, 0.0, 1.0));
    p.min_p = float(args.get_double("--min-p", p.min_p, 0.0, 1.0));
    p.repetition_penalty = float(args.get_double("--repeat-penalty", p.repetition_penalty, 0.01, 100.0));
    p.seed = args.get_u64("--seed", std::random_device{}());
    return p;
}

} // namespace arbor::cli
