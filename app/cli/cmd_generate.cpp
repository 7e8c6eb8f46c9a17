#include "cli_common.h"
#include "commands.h"

#include "arbor/error.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace arbor::cli {

int run_generate(const std::vector<std::string>& raw) {
    auto valued = model_options();
    valued.merge(sampling_options());
    valued.insert({"--prompt", "-p", "--prompt-file", "-n"});
    const CliArgs args(raw, valued, {"--ids", "--no-special", "--int8-activations"});

    std::string prompt;
    if (args.has("--prompt") || args.has("-p")) {
        if (args.has("--prompt-file")) throw UsageError("give either --prompt or --prompt-file, not both");
        prompt = args.get("--prompt").value_or(args.get_or("-p", ""));
    } else if (auto file = args.get("--prompt-file")) {
        std::ifstream in(*file, std::ios::binary);
        if (!in) throw Error("cannot read prompt file '" + *file + "'");
        std::ostringstream ss;
        ss << in.rdbuf();
        prompt = ss.str();
    } else {
        throw UsageError("generate needs --prompt TEXT or --prompt-file F");
    }

    GenerateOptions options;
    options.max_tokens = int32_t(args.get_int("-n", 128, 1, 1 << 20));
    options.sampler = sampler_params(args, 0.8f);
    LoadedModel loaded = load_model(args);
    const Tokenizer& tok = loaded.model->tokenizer();
    const auto ids = tok.encode(prompt, tok.adds_bos(), !args.has("--no-special"));
    if (ids.empty()) throw Error("the prompt is empty after tokenization");

    Request request;
    request.prompt = ids;
    request.options = options;
    const GenerateResult result = print_reply(*loaded.engine, std::move(request));
    if (args.has("--ids")) {
        std::string json = "\n[";
        for (size_t i = 0; i < result.tokens.size(); ++i) json += (i ? "," : "") + std::to_string(result.tokens[i]);
        std::printf("%s]\n", json.c_str());
    } else {
        std::printf("\n");
    }
    std::fprintf(stderr,
                 "prompt tokens: %d, prefill: %.1f tokens/s, decode: %.1f tokens/s (%zu tokens, %s), KV cache: %s, "
                 "on %s\n",
                 result.stats.prompt_tokens, result.prefill_tokens_per_second(),
                 result.stats.decode_tokens_per_second, result.tokens.size(),
                 std::string(finish_reason_name(result.finish)).c_str(), kv_type_name(loaded.engine->kv_type()),
                 loaded.engine->device().c_str());
    return 0;
}

} // namespace arbor::cli
