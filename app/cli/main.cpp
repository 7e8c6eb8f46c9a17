// arbor-cli: generate, tokenize and chat with a GGUF model from the terminal.
#include "cli_args.h"
#include "commands.h"

#include "arbor/error.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

const char* const kUsage =
    "usage:\n"
    "  arbor-cli generate [--model PATH] (--prompt TEXT | --prompt-file F) [-n N] [--temp T]\n"
    "                     [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S]\n"
    "                     [--threads N] [--ctx N] [--device auto|cpu|cuda[:N]] [--kv-type f16|f32|q8_0]\n"
    "                     [--int8-activations] [--ids]\n"
    "  arbor-cli tokenize [--model PATH] [--no-bos] [--no-special]   (text on standard input)\n"
    "  arbor-cli chat     [--model PATH] [--system TEXT] [-n N] [--temp T] [...sampling options]\n"
    "                     [--int8-activations]\n"
    "  --model defaults to the installed default model; add --verbose for engine logs.\n";

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    // Logs go to stderr so that stdout carries only the command's output.
    spdlog::set_default_logger(spdlog::stderr_color_mt("arbor"));
    spdlog::set_level(spdlog::level::warn);
    for (auto it = args.begin(); it != args.end();) {
        if (*it == "--verbose") {
            spdlog::set_level(spdlog::level::info);
            it = args.erase(it);
        } else {
            ++it;
        }
    }
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        std::fputs(kUsage, args.empty() ? stderr : stdout);
        return args.empty() ? 2 : 0;
    }
    const std::string command = args[0];
    args.erase(args.begin());
    try {
        if (command == "generate") return arbor::cli::run_generate(args);
        if (command == "tokenize") return arbor::cli::run_tokenize(args);
        if (command == "chat") return arbor::cli::run_chat(args);
        std::fprintf(stderr, "arbor-cli: unknown command '%s'\n%s", command.c_str(), kUsage);
        return 2;
    } catch (const arbor::cli::UsageError& e) {
        std::fprintf(stderr, "arbor-cli %s: %s\n%s", command.c_str(), e.what(), kUsage);
        return 2;
    } catch (const arbor::Error& e) {
        std::fprintf(stderr, "arbor-cli %s: error: %s\n", command.c_str(), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "arbor-cli %s: internal error: %s\n", command.c_str(), e.what());
        return 1;
    }
}
