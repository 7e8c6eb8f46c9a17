#include "cli_common.h"
#include "commands.h"

#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

#include <cstdio>
#include <iostream>
#include <iterator>

namespace arbor::cli {

int run_tokenize(const std::vector<std::string>& raw) {
    const CliArgs args(raw, {"--model", "-m"}, {"--no-bos", "--no-special"});
    const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    // Only the vocabulary is read, so any GGUF that carries one works: vocabulary-only
    // files and architectures the engine cannot run included.
    const std::unique_ptr<GgufFile> file = GgufFile::open(model_path(args));
    const std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(*file);
    const Tokenizer& tok = *tokenizer;
    const auto ids = tok.encode(text, !args.has("--no-bos") && tok.adds_bos(), !args.has("--no-special"));
    std::string json = "[";
    for (size_t i = 0; i < ids.size(); ++i) json += (i ? "," : "") + std::to_string(ids[i]);
    std::printf("%s]\n", json.c_str());
    return 0;
}

} // namespace arbor::cli
