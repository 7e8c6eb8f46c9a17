// Byte-level BPE pre-tokenizers: the word-splitting patterns that tokenizer.ggml.pre
// selects, applied one after another as the reference does (each pattern splits every
// piece the previous ones produced into matches and the text between them).
#pragma once

#include "regex.h"
#include "unicode.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::tok {

struct PreTokenizerInfo {
    std::string family;         // canonical family name, e.g. "llama3", "gpt2"
    bool ignore_merges = false;  // a word that is a whole vocabulary token skips merging
    bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
    std::vector<std::string_view> patterns;  // the split patterns, in the order they run
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
    std::vector<Regex> patterns_;
};

} // namespace arbor::tok
