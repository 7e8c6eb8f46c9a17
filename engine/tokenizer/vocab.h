// The vocabulary part shared by both tokenizer kinds: token texts, types and scores,
// special ids, end-of-generation set, and the split of input text around special
// tokens.
#pragma once

#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace arbor::tok {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

// The byte a "<0xXX>" token text stands for, or -1.
int parse_byte_token(std::string_view text);
// The "<0xXX>" text of the token standing for `byte`.
std::string byte_token_text(uint8_t byte);

// U+2581, SentencePiece's visible space (SentencePiece and SentencePiece-style BPE
// vocabularies write spaces so).
constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";
// `text` with every `from` replaced by `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);

struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIndex = std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>>;

// A piece of input text: either raw text [begin, end) or a special token.
struct Fragment {
    TokenId token = -1;  // >= 0 for a special token
    size_t begin = 0, end = 0;
};

class Vocab {
public:
    // Reads tokenizer.ggml.{tokens,token_type,scores,*_token_id,add_bos_token} and
    // general.name. `add_bos_default` applies when the file does not say.
    Vocab(const GgufFile& file, bool add_bos_default, TokenId default_bos, TokenId default_eos,
          TokenId default_unk);

    int32_t size() const { return static_cast<int32_t>(text_.size()); }
    const std::string& text(TokenId id) const { return text_[static_cast<size_t>(id)]; }
    TokenType type(TokenId id) const { return type_[static_cast<size_t>(id)]; }
    float score(TokenId id) const { return score_.empty() ? 0.0f : score_[static_cast<size_t>(id)]; }
    bool valid(TokenId id) const { return id >= 0 && id < size(); }

    // Exact text -> id over the whole vocabulary, -1 when absent.
    TokenId lookup(std::string_view text) const {
        const auto it = index_.find(text);
        return it == index_.end() ? -1 : it->second;
    }

    TokenId bos() const { return bos_; }
    TokenId eos() const { return eos_; }
    TokenId unk() const { return unk_; }
    bool add_bos() const { return add_bos_; }
    bool is_special(TokenId id) const;
    bool is_eog(TokenId id) const { return eog_.count(id) != 0; }

    // Splits text around special tokens, longest token first as the reference does.
    // User-defined tokens are always split out (they are added words of the
    // vocabulary); control and unknown tokens only when parse_special is set.
    std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;

private:
    void classify_special_tokens(const std::string& model_name);

    std::vector<std::string> text_;
    std::vector<TokenType> type_;
    std::vector<float> score_;
    TokenIndex index_;
    TokenId bos_ = -1, eos_ = -1, unk_ = -1, eot_ = -1, eom_ = -1;
    bool add_bos_ = false;
    std::unordered_set<TokenId> eog_;
    std::vector<TokenId> special_by_length_;  // split candidates, longest text first
    std::vector<uint8_t> strip_;              // per token: 1 lstrip, 2 rstrip (Phi-3)
};

} // namespace arbor::tok
