// Byte-level BPE pre-tokenizers: the word-splitting patterns that tokenizer.ggml.pre
// selects, applied one after another as the reference does (each pattern splits every
// piece the previous ones produced into matches and the text between them).
#pragma once

#include "regex.h"

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
    // Unknown names log a warning and use the gpt2 family; an empty name uses "default"
    // as the reference does.
    explicit PreTokenizer(std::string_view pre_name);

    const PreTokenizerInfo& info() const { return info_; }

    // Splits code points (with their cp_flags) into words, as [begin, end) index pairs.
    std::vector<std::pair<size_t, size_t>> split(const std::u32string& cps,
                                                 const std::vector<uint8_t>& flags) const;

private:
    PreTokenizerInfo info_;
    std::vector<Regex> patterns_;
};

} // namespace arbor::tok
