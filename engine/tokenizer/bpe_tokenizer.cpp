#include "unicode.h"
#include "vocab_tokenizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace arbor::tok {

BpeTokenizer::BpeTokenizer(const GgufFile& file, std::string_view pre_name)
    : BpeTokenizer(file, PreTokenizer(pre_name)) {}

BpeTokenizer::BpeTokenizer(const GgufFile& file, PreTokenizer pre)
    : VocabTokenizer(Vocab(file, pre.info().add_bos, -1, -1, -1)), pre_(std::move(pre)) {
    load_warning_ = pre_.warning();
    const ByteAlphabet& alphabet = byte_alphabet();
    const bool raw = pre_.info().raw_utf8;
    if (!raw)
        for (int b = 0; b < 256; ++b)
            byte_piece_[static_cast<size_t>(b)] = intern(alphabet.encode(static_cast<uint8_t>(b)));
    load_merges(file);
    // Raw UTF-8: every character that is a token is a piece too, so that words made of
    // such characters look their pieces up (a character neither a token nor in a merge
    // has no piece and ends as byte tokens).
    if (raw)
        for (TokenId id = 0; id < vocab_.size(); ++id)
            if (vocab_.type(id) == TokenType::Normal && decode_utf8(vocab_.text(id)).size() == 1) intern(vocab_.text(id));

    decoded_.resize(static_cast<size_t>(vocab_.size()));
    for (TokenId id = 0; id < vocab_.size(); ++id) {
        const std::string& text = vocab_.text(id);
        std::string& out = decoded_[static_cast<size_t>(id)];
        const TokenType type = vocab_.type(id);
        if (vocab_.is_special(id)) {
            out = text;
        } else if (type == TokenType::Byte && parse_byte_token(text) >= 0) {
            out.push_back(static_cast<char>(parse_byte_token(text)));
        } else if (raw) {
            out = replace_all(text, kEscapedSpace, " ");
        } else {
            // Stand-in characters become their bytes; anything else is kept as written.
            for (char32_t cp : decode_utf8(text)) {
                const int b = alphabet.decode(cp);
                if (b >= 0) out.push_back(static_cast<char>(b));
                else append_utf8(out, cp);
            }
        }
    }
    spdlog::debug("tokenizer: {} BPE, {} tokens, {} merges, pre-tokenizer {}", raw ? "UTF-8" : "byte-level",
                  vocab_.size(), merges_.size(), pre_.info().family);
}

int32_t BpeTokenizer::intern(std::string_view text) {
    const auto it = piece_index_.find(text);
    if (it != piece_index_.end()) return it->second;
    const auto id = static_cast<int32_t>(piece_text_.size());
    const TokenId token = vocab_.lookup(text);
    const auto [pos, inserted] = piece_index_.emplace(std::string(text), id);
    piece_text_.push_back(&pos->first);
    piece_token_.push_back(token);
    return id;
}

void BpeTokenizer::load_merges(const GgufFile& file) {
    const GgufValue* v = file.find("tokenizer.ggml.merges");
    if (!v) throw Error("tokenizer: byte-level BPE model without tokenizer.ggml.merges");
    const auto* merges = v->as_array();
    if (!merges) throw Error("tokenizer: tokenizer.ggml.merges is not an array");
    merges_.reserve(merges->size() * 2);
    piece_index_.reserve(merges->size() * 2);
    std::string joined;
    for (size_t i = 0; i < merges->size(); ++i) {
        const std::string* m = (*merges)[i].as_string();
        if (!m) throw Error("tokenizer: tokenizer.ggml.merges[" + std::to_string(i) + "] is not a string");
        // "left right", split at the first space after the first character.
        const size_t sp = m->find(' ', 1);
        if (sp == std::string::npos) continue;
        const std::string_view text(*m);
        const int32_t left = intern(text.substr(0, sp));
        const int32_t right = intern(text.substr(sp + 1));
        joined.assign(text.substr(0, sp)).append(text.substr(sp + 1));
        const int32_t result = intern(joined);
        const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
        merges_.emplace(key, Merge{static_cast<int32_t>(i), result});
    }
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    return encode_fragments(text, add_bos, parse_special, [this](std::string_view piece, std::vector<TokenId>& out) {
        if (pre_.info().raw_utf8) encode_text(replace_all(piece, " ", kEscapedSpace), out);
        else encode_text(piece, out);
    });
}

void BpeTokenizer::encode_text(std::string_view text, std::vector<TokenId>& out) const {
    const std::u32string cps = decode_utf8(text);
    std::vector<CpFlags> flags(cps.size());
    // Re-encoded text (bad bytes are U+FFFD by now) with each code point's byte offset.
    std::string utf8;
    utf8.reserve(text.size());
    std::vector<uint32_t> offset(cps.size() + 1);
    for (size_t i = 0; i < cps.size(); ++i) {
        flags[i] = cp_flags(cps[i]);
        offset[i] = static_cast<uint32_t>(utf8.size());
        append_utf8(utf8, cps[i]);
    }
    offset[cps.size()] = static_cast<uint32_t>(utf8.size());
    for (const auto& [b, e] : pre_.split(cps, flags)) {
        encode_word(std::string_view(utf8).substr(offset[b], offset[e] - offset[b]), out);
    }
}

namespace {

struct Bigram {
    int32_t rank;
    int32_t left, right;
    int32_t left_piece, right_piece, result;
};

// Lowest rank first, then leftmost.
struct BigramAfter {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

} // namespace

// Symbols start as the word's bytes (byte-level) or characters (raw UTF-8), symbol i at
// byte start[i]; merging joins a symbol into the one on its left. piece[i] is the
// symbol's piece, kMergedAway once joined, kNoPiece for a character without one.
void BpeTokenizer::encode_word(std::string_view bytes, std::vector<TokenId>& out) const {
    constexpr int32_t kMergedAway = -1, kNoPiece = -2;
    const ByteAlphabet& alphabet = byte_alphabet();
    const PreTokenizerInfo& info = pre_.info();
    const bool raw = info.raw_utf8;
    if (info.ignore_merges ||
        (info.newline_words_whole && bytes.find_first_not_of('\n') == std::string_view::npos)) {
        std::string mapped;
        if (raw) mapped = bytes;
        else for (unsigned char c : bytes) mapped += alphabet.encode(c);
        const TokenId id = vocab_.lookup(mapped);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }

    std::vector<int32_t> piece, start;
    piece.reserve(bytes.size());
    start.reserve(bytes.size());
    for (size_t at = 0; at < bytes.size();) {
        const size_t len = raw ? std::min(bytes.size() - at, utf8_len(static_cast<uint8_t>(bytes[at]))) : 1;
        if (raw) {
            const auto it = piece_index_.find(bytes.substr(at, len));
            piece.push_back(it == piece_index_.end() ? kNoPiece : it->second);
        } else {
            piece.push_back(byte_piece_[static_cast<unsigned char>(bytes[at])]);
        }
        start.push_back(static_cast<int32_t>(at));
        at += len;
    }
    const auto n = static_cast<int32_t>(piece.size());
    std::vector<int32_t> prev(piece.size()), next(piece.size());
    for (int32_t i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    std::vector<Bigram> heap;
    auto add = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0 || piece[l] < 0 || piece[r] < 0) return;
        const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(piece[l])) << 32) |
                             static_cast<uint32_t>(piece[r]);
        const auto it = merges_.find(key);
        if (it == merges_.end()) return;
        heap.push_back({it->second.rank, l, r, piece[l], piece[r], it->second.result});
        std::push_heap(heap.begin(), heap.end(), BigramAfter{});
    };
    for (int32_t i = 1; i < n; ++i) add(i - 1, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), BigramAfter{});
        const Bigram bg = heap.back();
        heap.pop_back();
        // A symbol merged away has piece -1; a grown one has a different piece.
        if (piece[bg.left] != bg.left_piece || piece[bg.right] != bg.right_piece) continue;
        piece[bg.left] = bg.result;
        piece[bg.right] = kMergedAway;
        next[bg.left] = next[bg.right];
        if (next[bg.right] >= 0) prev[next[bg.right]] = bg.left;
        add(prev[bg.left], bg.left);
        add(bg.left, next[bg.left]);
    }

    for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = next[i]) {
        const TokenId id = piece[i] >= 0 ? piece_token_[piece[i]] : -1;
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        if (raw) {
            // The symbol's bytes as <0xXX> tokens.
            const int32_t end = next[i] >= 0 ? start[next[i]] : static_cast<int32_t>(bytes.size());
            for (int32_t b = start[i]; b < end; ++b) {
                const TokenId t = vocab_.lookup(byte_token_text(static_cast<uint8_t>(bytes[b])));
                if (t >= 0) out.push_back(t);
            }
            continue;
        }
        // No token for this piece: fall back to single-byte tokens of its text.
        for (char c : *piece_text_[piece[i]]) {
            const TokenId b = vocab_.lookup(std::string_view(&c, 1));
            if (b >= 0) out.push_back(b);
        }
    }
}

std::string BpeTokenizer::token_bytes(TokenId id) const {
    check_id(id);
    return decoded_[static_cast<size_t>(id)];
}

} // namespace arbor::tok
