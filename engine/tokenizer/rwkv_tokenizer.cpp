// RWKV's "world" tokenizer (tokenizer.ggml.model "rwkv"), as llama.cpp reads it. The
// vocabulary is a list of byte strings (every single byte among them) with no scores and
// no merges: the text's bytes are cut greedily, each time into the longest token that
// matches at the current position. Nothing is normalized and no space is added.
//
// GGUF stores token texts as strings, so the converter writes each token's bytes as
// Python writes a bytes literal without its quotes: printable ASCII as itself, "\\" and
// "\'" for the backslash and quote, "\t" "\n" "\r", and "\xNN" for any other byte (so a
// multi-byte UTF-8 character is several escapes). Tokens are matched and decoded as the
// bytes those texts stand for.
#include "vocab_tokenizer.h"

#include <spdlog/spdlog.h>

namespace arbor::tok {

namespace {

// The bytes an escaped token text stands for. Hex digits are the lowercase ones the
// converter writes; any other character after "\x" counts what the reference's
// arithmetic makes of it (its code minus '0', or minus 'a' plus 10 from 'a' up). A text
// that ends inside an escape drops that escape.
std::string unescape(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    int hex_left = 0;
    unsigned acc = 0;
    bool escaped = false;
    for (const char c : text) {
        if (hex_left > 0) {
            const int digit = c >= 'a' ? c - 'a' + 10 : c - '0';
            acc = (acc * 16 + static_cast<unsigned>(digit)) & 0xFF;
            if (--hex_left == 0) {
                out.push_back(static_cast<char>(acc));
                acc = 0;
            }
        } else if (escaped) {
            escaped = false;
            switch (c) {
            case 't': out.push_back('\t'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 'x': hex_left = 2; break;
            default: out.push_back(c); break;  // "\\", "\'" and the like: the character
            }
        } else if (c == '\\') {
            escaped = true;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

} // namespace

RwkvTokenizer::RwkvTokenizer(const GgufFile& file) : VocabTokenizer(Vocab(file, false, -1, -1, -1)) {
    // Every token takes part in matching, control and unused ones included, as in the
    // reference.
    bytes_.reserve(static_cast<size_t>(vocab_.size()));
    std::vector<std::pair<std::string_view, TokenId>> keys;
    keys.reserve(bytes_.capacity());
    for (TokenId id = 0; id < vocab_.size(); ++id) bytes_.push_back(unescape(vocab_.text(id)));
    for (TokenId id = 0; id < vocab_.size(); ++id) keys.emplace_back(bytes_[static_cast<size_t>(id)], id);
    trie_ = ByteTrie(std::move(keys));
    spdlog::debug("tokenizer: RWKV, {} tokens", vocab_.size());
}

// No BOS: the reference's RWKV tokenizer adds none, whatever the file's flag says.
std::vector<TokenId> RwkvTokenizer::encode(std::string_view text, bool /*add_bos*/, bool parse_special) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 1);
    for (const Fragment& f : vocab_.split_special(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            continue;
        }
        for (size_t pos = f.begin; pos < f.end;) {
            TokenId longest = -1;
            size_t longest_end = pos + 1;
            ByteTrie::Node node = ByteTrie::kRoot;
            for (size_t i = pos; i < f.end;) {
                node = trie_.child(node, static_cast<unsigned char>(text[i++]));
                if (node == ByteTrie::kNone) break;
                if (const TokenId id = trie_.value(node); id >= 0) {
                    longest = id;
                    longest_end = i;
                }
            }
            // A byte no token starts with is the unknown token when the file names one,
            // else dropped (the reference would emit an invalid id); so is a byte that only
            // starts longer tokens (the reference would go back to the text's start, and
            // never end). Vocabularies hold all 256 bytes, so only broken files get here.
            if (longest >= 0) out.push_back(longest);
            else if (vocab_.unk() >= 0) out.push_back(vocab_.unk());
            pos = longest_end;
        }
    }
    return out;
}

std::string RwkvTokenizer::token_bytes(TokenId id) const {
    check_id(id);
    return bytes_[static_cast<size_t>(id)];
}

} // namespace arbor::tok
