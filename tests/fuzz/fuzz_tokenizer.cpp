// Arbitrary bytes through every fixture vocabulary (and the default model's): encoding
// gives ids inside the vocabulary, with and without special-token parsing; streaming
// the ids out gives the same valid UTF-8 as decoding them at once; byte-level BPE gives
// back any valid UTF-8 text exactly.
#include "fixture_vocabularies.h"
#include "unicode.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(bool ok, const char* what, const std::string& vocabulary, std::string_view text) {
    if (ok) return;
    std::fprintf(stderr, "%s (%s)\ntext: %.*s\n", what, vocabulary.c_str(), int(text.size()), text.data());
    std::abort();
}

bool valid_utf8(std::string_view s) {
    size_t consumed = 0;
    return arbor::tok::sanitize_utf8(s, true, consumed) == s;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);
    (void)arbor::fuzz::fixture_vocabularies();  // loaded before the first input is timed
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const bool text_is_utf8 = valid_utf8(text);
    for (const auto& v : arbor::fuzz::fixture_vocabularies()) {
        const arbor::Tokenizer& tok = *v.tokenizer;
        for (bool parse_special : {false, true}) {
            const auto ids = tok.encode(text, parse_special, parse_special);  // BOS with special parsing
            for (auto id : ids) check(id >= 0 && id < tok.n_vocab(), "id outside the vocabulary", v.name, text);
            arbor::StreamDecoder stream(tok);
            std::string streamed;
            for (auto id : ids) streamed += stream.push(id);
            streamed += stream.flush();
            const std::string decoded = tok.decode(ids);
            size_t consumed = 0;
            check(streamed == arbor::tok::sanitize_utf8(decoded, true, consumed),
                  "streamed text differs from the decoded text", v.name, text);
            const bool bytes_have_tokens =
                std::all_of(text.begin(), text.end(), [&](char c) { return v.byte_has_token[uint8_t(c)]; });
            if (!parse_special && v.byte_level && text_is_utf8 && bytes_have_tokens)
                check(decoded == text, "byte-level BPE does not round-trip", v.name, text);
        }
    }
    return 0;
}
