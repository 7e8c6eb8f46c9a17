// Unigram (tokenizer.ggml.model "t5"), SentencePiece's unigram language model as llama.cpp
// reads it: every piece has a score (its log-probability), and text is cut into the
// pieces whose scores sum highest, found by dynamic programming over byte offsets
// (Viterbi). A character no piece covers is the unknown token, scored below the worst
// piece, and unknown characters in a row become one unknown token.
//
// Before that the text is normalized as the model was trained: the file's precompiled
// charsmap (tokenizer.ggml.precompiled_charsmap, SentencePiece's NFKC-like rules compiled
// into a double-array trie of byte strings and their replacements) rewrites the longest
// matching prefix again and again, spaces become "▁" (U+2581), runs of them merge into
// one and a "▁" goes in front of the first word when the file's keys ask for it.
#include "vocab_tokenizer.h"

#include "unicode.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cfloat>
#include <unordered_set>

namespace arbor::tok {

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD
constexpr std::string_view kCharsmapKey = "tokenizer.ggml.precompiled_charsmap";

// A character's score deficit below the lowest-scored piece when no piece covers it.
constexpr float kUnknownPenalty = 10.0f;

// The charsmap's trie nodes are 32-bit words (the XOR-compressed double array of
// Kanda 2018, as SentencePiece and Darts-clone store it): bits 0-7 the label that leads
// into the node, bit 8 whether a replacement ends here, bits 10-30 the base offset of the
// children (shifted left by 8 more when bit 9 is set). A node holding a replacement's
// offset has bit 31 set, so no label check ever matches it.
uint32_t node_base(uint32_t node) { return (node >> 10) << ((node >> 6) & 8); }
uint32_t node_label(uint32_t node) { return node & 0x800000FFu; }
bool node_has_replacement(uint32_t node) { return (node >> 8) & 1; }
uint32_t node_value(uint32_t node) { return node & 0x7FFFFFFFu; }

// The length of the UTF-8 sequence at text[offset], or 0 when its lead byte or
// continuation bytes are wrong. Lenient as the reference is: the lead byte decides the
// length and continuation bytes need only the 10xxxxxx form (overlong forms pass).
size_t utf8_sequence_length(std::string_view text, size_t offset) {
    const auto lead = static_cast<unsigned char>(text[offset]);
    size_t len = 0;
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) len = 2;
    else if ((lead & 0xF0) == 0xE0) len = 3;
    else if ((lead & 0xF8) == 0xF0) len = 4;
    else return 0;  // a continuation byte, or 0xF8 and above
    if (offset + len > text.size()) return 0;
    for (size_t i = 1; i < len; ++i)
        if ((static_cast<unsigned char>(text[offset + i]) & 0xC0) != 0x80) return 0;
    return len;
}

// The token types as the file states them. Vocab promotes end-of-generation and
// "<|...|>" tokens to control; the reference builds its piece set before doing so, and
// keeps a promoted user-defined token's zero score.
std::vector<TokenType> file_token_types(const GgufFile& file, size_t n) {
    std::vector<TokenType> types(n, TokenType::Normal);
    const GgufValue* v = file.find("tokenizer.ggml.token_type");
    if (!v || !v->as_array()) return types;  // Vocab has checked the array
    const auto& arr = *v->as_array();
    for (size_t i = 0; i < n && i < arr.size(); ++i) {
        const int64_t t = arr[i].as_int().value_or(0);
        types[i] = t >= 0 && t <= 6 ? static_cast<TokenType>(t) : TokenType::Undefined;
    }
    return types;
}

} // namespace

UgmTokenizer::UgmTokenizer(const GgufFile& file)
    : VocabTokenizer(Vocab(file, false, -1, 1, 2)),
      add_space_prefix_(file.get_bool("tokenizer.ggml.add_space_prefix").value_or(false)),
      remove_extra_whitespaces_(file.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false)) {
    if (vocab_.unk() < 0)
        throw Error("tokenizer: the unigram vocabulary has no unknown token (tokenizer.ggml.unknown_token_id, "
                    "default 2, is outside its " + std::to_string(vocab_.size()) + " tokens)");
    load_charsmap(file);

    const auto types = file_token_types(file, static_cast<size_t>(vocab_.size()));
    std::vector<std::pair<std::string_view, TokenId>> pieces, user_defined;
    scoreless_.assign(types.size(), false);
    float min_score = FLT_MAX;
    for (TokenId id = 0; id < vocab_.size(); ++id) {
        const TokenType t = types[static_cast<size_t>(id)];
        if (t == TokenType::Normal) min_score = std::min(min_score, vocab_.score(id));
        if (t == TokenType::Normal || t == TokenType::UserDefined || t == TokenType::Unused)
            pieces.emplace_back(vocab_.text(id), id);
        if (t == TokenType::UserDefined) {
            user_defined.emplace_back(vocab_.text(id), id);
            scoreless_[static_cast<size_t>(id)] = true;
        }
    }
    // Computed in float as the reference does: with no normal token at all the unknown
    // token outscores everything.
    unknown_score_ = min_score - kUnknownPenalty;
    pieces_ = ByteTrie(std::move(pieces));
    user_defined_ = ByteTrie(std::move(user_defined));
    spdlog::debug("tokenizer: unigram, {} tokens, charsmap {} nodes, space prefix {}, merge spaces {}", vocab_.size(),
                  charsmap_nodes_.size(), add_space_prefix_, remove_extra_whitespaces_);
}

// Reads the charsmap (a little-endian uint32 byte count, that many bytes of trie nodes,
// then the replacement strings) and walks every path of its trie once, so that a
// malformed one is an error here and normalizing can never leave the arrays. A file
// without a charsmap normalizes only spaces.
void UgmTokenizer::load_charsmap(const GgufFile& file) {
    const GgufValue* v = file.find(kCharsmapKey);
    if (!v) return;
    const auto* arr = v->as_array();
    if (!arr || (v->element_type != GgufType::Uint8 && v->element_type != GgufType::Int8))
        throw Error("tokenizer: " + std::string(kCharsmapKey) + " is not an array of bytes");
    std::string blob(arr->size(), '\0');
    for (size_t i = 0; i < arr->size(); ++i) {
        const auto b = (*arr)[i].as_int();
        if (!b) throw Error("tokenizer: " + std::string(kCharsmapKey) + "[" + std::to_string(i) + "] is not a byte");
        blob[i] = static_cast<char>(*b & 0xFF);
    }
    const auto malformed = [](const std::string& why) {
        return Error("tokenizer: malformed " + std::string(kCharsmapKey) + ": " + why);
    };
    if (blob.size() < 4) throw malformed("shorter than its 4-byte header");
    const uint32_t trie_bytes = uint32_t(uint8_t(blob[0])) | uint32_t(uint8_t(blob[1])) << 8 |
                                uint32_t(uint8_t(blob[2])) << 16 | uint32_t(uint8_t(blob[3])) << 24;
    // As the reference requires, at least one byte of replacements follows the trie.
    if (uint64_t(trie_bytes) + 4 >= blob.size())
        throw malformed("its trie (" + std::to_string(trie_bytes) + " bytes) does not fit in its " +
                        std::to_string(blob.size()) + " bytes");
    charsmap_nodes_.resize(trie_bytes / 4);
    for (size_t i = 0; i < charsmap_nodes_.size(); ++i) {
        const auto* p = reinterpret_cast<const unsigned char*>(blob.data() + 4 + 4 * i);
        charsmap_nodes_[i] = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    }
    charsmap_strings_ = blob.substr(4 + size_t(trie_bytes));
    if (charsmap_nodes_.empty()) return;

    // Every state a walk can reach, every byte out of it: the child slot must be inside
    // the array, and a replacement must start inside the strings and end with a NUL.
    const auto size = charsmap_nodes_.size();
    std::vector<uint32_t> pending{node_base(charsmap_nodes_[0])};
    std::unordered_set<uint32_t> seen{pending.front()};
    while (!pending.empty()) {
        const uint32_t state = pending.back();
        pending.pop_back();
        for (uint32_t c = 1; c < 256; ++c) {
            const uint32_t slot = state ^ c;
            if (slot >= size) throw malformed("a path leaves its trie");
            const uint32_t node = charsmap_nodes_[slot];
            if (node_label(node) != c) continue;
            const uint32_t next = slot ^ node_base(node);
            if (node_has_replacement(node)) {
                if (next >= size) throw malformed("a replacement's node is outside its trie");
                const uint32_t offset = node_value(charsmap_nodes_[next]);
                if (offset >= charsmap_strings_.size() || charsmap_strings_.find('\0', offset) == std::string::npos)
                    throw malformed("a replacement lies outside its strings or has no end");
            }
            if (seen.insert(next).second) pending.push_back(next);
        }
    }
}

std::vector<TokenId> UgmTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    // Each piece of text between special tokens is normalized on its own, so each gets
    // its own space prefix, as in the reference.
    return encode_fragments(text, add_bos, parse_special,
                            [this](std::string_view piece, std::vector<TokenId>& out) { encode_text(piece, out); });
}

// The normalized form of the text's prefix at `offset`: sets `out` to it and returns how
// many input bytes it stands for (at least 1).
size_t UgmTokenizer::normalize_prefix(std::string_view text, size_t offset, std::string_view& out) const {
    // Text along the user-defined tokens' trie is left alone. Like the reference this
    // takes the longest path of the trie the text follows, whether or not a whole token
    // ends there.
    size_t along = 0;
    for (ByteTrie::Node n = ByteTrie::kRoot; offset + along < text.size(); ++along) {
        n = user_defined_.child(n, static_cast<unsigned char>(text[offset + along]));
        if (n == ByteTrie::kNone) break;
    }
    if (along > 0) {
        out = text.substr(offset, along);
        return along;
    }

    // The longest prefix the charsmap has a replacement for (a NUL byte ends the search).
    size_t match_len = 0;
    uint32_t match_offset = 0;
    if (!charsmap_nodes_.empty()) {
        const auto size = charsmap_nodes_.size();
        uint32_t state = node_base(charsmap_nodes_[0]);
        for (size_t i = offset; i < text.size() && text[i] != '\0'; ++i) {
            const auto c = static_cast<unsigned char>(text[i]);
            const uint32_t slot = state ^ c;
            if (slot >= size) break;  // never, once load_charsmap has accepted the trie
            const uint32_t node = charsmap_nodes_[slot];
            if (node_label(node) != c) break;
            state = slot ^ node_base(node);
            if (node_has_replacement(node)) {
                match_len = i - offset + 1;
                match_offset = node_value(charsmap_nodes_[state]);
            }
        }
    }
    if (match_len > 0) {
        // NUL-terminated inside the strings: checked at load.
        out = std::string_view(charsmap_strings_.data() + match_offset);
        return match_len;
    }

    // Otherwise the character itself, or U+FFFD for one byte that does not start one.
    const size_t len = utf8_sequence_length(text, offset);
    if (len == 0) {
        out = kReplacementChar;
        return 1;
    }
    out = text.substr(offset, len);
    return len;
}

// Normalizes a whole text. Only ' ' counts as a space here: the charsmap has already
// turned tabs, newlines and other spaces into it (or removed them).
std::string UgmTokenizer::normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size() * 3);
    bool in_word = false, prefixed = false;
    for (size_t offset = 0; offset < text.size();) {
        std::string_view piece;
        offset += normalize_prefix(text, offset, piece);
        for (char c : piece) {
            if (c == ' ') {
                in_word = false;
                if (!remove_extra_whitespaces_) out += kEscapedSpace;
                continue;
            }
            // With spaces merged, each word (the first one too) gets one "▁" in front
            // for the run of spaces before it; trailing spaces vanish. Otherwise only the
            // first word gets one, and only when the file asks for a space prefix.
            // (SentencePiece can also put the space after a word; llama.cpp reads no key
            // for that, and never does.)
            if (!in_word) {
                in_word = true;
                if ((add_space_prefix_ && !prefixed) || remove_extra_whitespaces_) {
                    out += kEscapedSpace;
                    prefixed = true;
                }
            }
            out.push_back(c);
        }
    }
    return out;
}

namespace {

// The best segmentation of the text's first bytes found so far: its last token, where
// that token starts, and the total score. Scores add in double precision so that ties
// and near-ties resolve as in SentencePiece itself.
struct Best {
    TokenId token;
    size_t start;
    double score;
};

} // namespace

void UgmTokenizer::encode_text(std::string_view raw, std::vector<TokenId>& out) const {
    const std::string text = normalize(raw);
    const size_t n = text.size();
    if (n == 0) return;
    const TokenId unk = vocab_.unk();

    // best[i] covers text[0, i). Offsets inside a character are reached only by pieces
    // that end there; every character boundary is reachable, through the unknown token.
    std::vector<Best> best(n + 1, Best{unk, 0, -DBL_MAX});
    best[0].score = 0;
    for (size_t start = 0; start < n;) {
        const size_t char_len = std::min(utf8_len(static_cast<unsigned char>(text[start])), n - start);
        const double base = best[start].score;
        bool char_covered = false;  // a piece is exactly this character
        ByteTrie::Node node = ByteTrie::kRoot;
        for (size_t end = start; end < n;) {
            node = pieces_.child(node, static_cast<unsigned char>(text[end++]));
            if (node == ByteTrie::kNone) break;
            const TokenId id = pieces_.value(node);
            if (id < 0) continue;
            if (end - start == char_len) char_covered = true;
            // User-defined tokens score 0, above every normal piece's log-probability.
            const double score = base + (scoreless_[static_cast<size_t>(id)] ? 0.0 : double(vocab_.score(id)));
            // Strictly greater: of equal scores the first found stays, i.e. the one
            // whose last token starts earliest.
            if (score > best[end].score) best[end] = {id, start, score};
        }
        if (!char_covered) {
            const double score = base + double(unknown_score_);
            Best& b = best[start + char_len];
            if (score > b.score) b = {unk, start, score};
        }
        start += char_len;
    }

    // Back from the end; unknown tokens in a row stand for one.
    const size_t first = out.size();
    bool prev_unknown = false;
    for (size_t end = n;;) {
        const Best& b = best[end];
        const bool unknown = b.token == unk;
        if (!(unknown && prev_unknown)) out.push_back(b.token);
        if (b.start == 0) break;
        prev_unknown = unknown;
        end = b.start;
    }
    std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

// As the reference's token_to_piece with special tokens rendered: control, unknown and
// user-defined tokens as their text, normal pieces with "▁" as a space, byte tokens as
// their byte; unused and undefined tokens as nothing.
std::string UgmTokenizer::token_bytes(TokenId id) const {
    check_id(id);
    const std::string& text = vocab_.text(id);
    if (vocab_.is_special(id)) return text;
    switch (vocab_.type(id)) {
    case TokenType::Normal:
        return replace_all(text, kEscapedSpace, " ");
    case TokenType::Byte: {
        const int b = parse_byte_token(text);
        return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    default:
        return {};
    }
}

} // namespace arbor::tok
