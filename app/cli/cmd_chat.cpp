// Interactive multi-turn chat in the terminal. The conversation is kept as token ids:
// each turn's prompt extends the previous one, so the engine's prefix cache serves what
// was computed before and only new tokens are computed.
#include "cli_common.h"
#include "commands.h"

#include "arbor/chat_template.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <unistd.h>

namespace arbor::cli {

int run_chat(const std::vector<std::string>& raw) {
    auto valued = model_options();
    valued.merge(sampling_options());
    valued.insert({"--system", "-n"});
    const CliArgs args(raw, valued, {"--int8-activations"});

    GenerateOptions options;
    options.max_tokens = int32_t(args.get_int("-n", 512, 1, 1 << 20));
    options.sampler = sampler_params(args, 0.7f);
    LoadedModel loaded = load_model(args);
    const Model& model = *loaded.model;
    const ChatFormatter formatter(model.tokenizer(), model.chat_template_source());
    // The tokenizer's warning was printed at load (load_model).
    if (const std::string& warning = formatter.fallback_warning(); !warning.empty())
        std::fprintf(stderr, "arbor-cli: warning: %s\n", warning.c_str());

    std::vector<ChatMessage> messages;
    if (auto system = args.get("--system")) messages.push_back({Role::System, formatter.encode_content(*system)});
    const bool interactive = isatty(STDIN_FILENO);
    if (interactive)
        std::fprintf(stderr, "Chatting with %s. Type a message and press Enter; /reset clears, /quit or Ctrl+D ends.\n",
                     model.config().name.c_str());
    std::string line;
    for (;;) {
        if (interactive) std::fputs("\n> ", stdout), std::fflush(stdout);
        if (!std::getline(std::cin, line)) break;
        if (line == "/quit" || line == "/exit") break;
        if (line == "/reset") {
            messages.erase(std::remove_if(messages.begin(), messages.end(),
                                          [](const ChatMessage& m) { return m.role != Role::System; }),
                           messages.end());
            std::fputs("(conversation cleared)\n", stderr);
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({Role::User, formatter.encode_content(line)});
        const auto prompt = formatter.compose(messages);
        Request request;
        request.prompt = prompt;
        request.options = options;
        const GenerateResult result = print_reply(*loaded.engine, std::move(request));
        std::fputs("\n", stdout);
        std::fflush(stdout);
        messages.push_back({Role::Assistant, result.tokens});
        std::fprintf(stderr, "[%d prompt tokens, %d cached, %.1f tokens/s]\n", result.stats.prompt_tokens,
                     result.stats.cached_tokens, result.stats.decode_tokens_per_second);
    }
    return 0;
}

} // namespace arbor::cli
