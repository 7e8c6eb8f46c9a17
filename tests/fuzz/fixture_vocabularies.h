// The tokenizers the tokenizer and chat-template fuzz targets run: every vocabulary of
// tests/data/tokenizer, plus the default model's when it is installed.
#pragma once

#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace arbor::fuzz {

struct FixtureVocabulary {
    std::string name;  // file name
    // tokenizer.ggml.model "gpt2": a UTF-8 text round-trips when the vocabulary has a
    // token for each of its bytes (Falcon's lacks some control bytes, which are dropped,
    // as the reference tokenizer drops them).
    bool byte_level = false;
    std::array<bool, 256> byte_has_token{};
    std::unique_ptr<GgufFile> file;  // the tokenizer reads from it
    std::unique_ptr<Tokenizer> tokenizer;
};

// Loaded once per process; exits with a message when tests/data/tokenizer has none.
const std::vector<FixtureVocabulary>& fixture_vocabularies();

} // namespace arbor::fuzz
