// BPE pre-tokenizers: the word-splitting patterns that tokenizer.ggml.pre selects, applied one after another as the reference does (each pattern splits every
// piece the previous ones produced into matches and the text between them).
#pragma once

#include "regex.h"
#include "unicode.h"

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace arbor::tok {

struct PreTokenizerInfo {
    std::string family;         // canonical family name, e.g. "llama3", "gpt2"
    bool ignore_merges = false;  // a word that is a whole vocabulary token skips merging
    bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
    // SentencePiece-style BPE (Gemma 4): merges run on the text's UTF-8 characters, not on
    // GPT-2's stand-ins for its bytes, with each space written as U+2581 first; a character
    // no piece covers becomes <0xXX> byte tokens.
    bool raw_utf8 = false;
    // A word of newlines alone that is a token stays that token (Gemma 4: its merges would
    // otherwise split a run of newlines the way the model never saw).
    bool newline_words_whole = false;
    bool always_bos = false;     // BOS even where tokenizer.ggml.add_bos_token says no (Gemma 4)
    std::vector<std::string_view> patterns;  // the split patterns, in the order they run
};

// Runs of `digit` code points split into groups of three from the right (the first group
// takes what is left over): what \p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})) and, with
// needs_boundary, \d{1,3}(?=(?:\d{3})*\b) match, in linear time.
struct DigitGroups {
    CpFlags digit = kNumber;
    bool needs_boundary = false;  // a run followed by a word character is left whole
    void split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
               std::vector<std::pair<size_t, size_t>>& out) const;
};

class PreTokenizer {
public:
    // Unknown names use the gpt2 family; an empty name uses "default" as the reference
    // does. Either way warning() says so (and the log).
    explicit PreTokenizer(std::string_view pre_name);

    const PreTokenizerInfo& info() const { return info_; }
    // Why the splitting may differ from the model's (an unknown or missing name), for the
    // user; empty when the name is known.
    const std::string& warning() const { return warning_; }

    // Splits code points (with their cp_flags) into words, as [begin, end) index pairs.
    std::vector<std::pair<size_t, size_t>> split(const std::u32string& cps,
                                                 const std::vector<CpFlags>& flags) const;

private:
    PreTokenizerInfo info_;
    std::string warning_;
    std::vector<std::variant<Regex, DigitGroups>> steps_;  // one per pattern of info_
};

} // namespace arbor::tok
