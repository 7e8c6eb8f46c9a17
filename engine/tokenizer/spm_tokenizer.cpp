#include "unicode.h"
#include "vocab_tokenizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace arbor::tok {

SpmTokenizer::SpmTokenizer(const GgufFile& file)
    : VocabTokenizer(Vocab(file, true, 1, 2, 0)),
      add_space_prefix_(file.get_bool("tokenizer.ggml.add_space_prefix").value_or(true)) {
    for (int b = 0; b < 256; ++b) {
        TokenId id = vocab_.lookup(byte_token_text(static_cast<uint8_t>(b)));
        if (id < 0) id = vocab_.lookup(std::string(1, static_cast<char>(b)));
        byte_token_[static_cast<size_t>(b)] = id;
    }
    spdlog::debug("tokenizer: SentencePiece, {} tokens, space prefix {}", vocab_.size(), add_space_prefix_);
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    std::vector<TokenId> out;
    out.reserve(text.size() / 3 + 2);
    if (add_bos && vocab_.add_bos()) out.push_back(vocab_.bos());
    bool prev_special = true;  // the first text piece gets the space prefix
    std::string piece;
    for (const Fragment& f : vocab_.split_special(text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        piece.clear();
        if (add_space_prefix_ && prev_special) piece += kEscapedSpace;
        for (char c : text.substr(f.begin, f.end - f.begin)) {
            if (c == ' ') piece += kEscapedSpace;
            else piece.push_back(c);
        }
        encode_text(piece, out);
        prev_special = false;
    }
    return out;
}

namespace {

struct Symbol {
    uint32_t offset, size;  // bytes of the text; size 0 once merged into its left neighbour
    int32_t prev, next;
};

struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;
};

// Highest score first, then leftmost.
struct BigramBelow {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

} // namespace

void SpmTokenizer::encode_text(const std::string& text, std::vector<TokenId>& out) const {
    std::vector<Symbol> sym;
    for (size_t off = 0; off < text.size();) {
        const auto len = static_cast<uint32_t>(
            std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off));
        const auto idx = static_cast<int32_t>(sym.size());
        sym.push_back({static_cast<uint32_t>(off), len, idx - 1, off + len < text.size() ? idx + 1 : -1});
        off += len;
    }
    if (sym.empty()) return;

    std::vector<Bigram> heap;
    auto add = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t size = sym[l].size + sym[r].size;
        const TokenId id = vocab_.lookup(std::string_view(text).substr(sym[l].offset, size));
        if (id < 0) return;
        heap.push_back({vocab_.score(id), l, r, size});
        std::push_heap(heap.begin(), heap.end(), BigramBelow{});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) add(i - 1, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), BigramBelow{});
        const Bigram bg = heap.back();
        heap.pop_back();
        Symbol& l = sym[bg.left];
        Symbol& r = sym[bg.right];
        if (l.size == 0 || r.size == 0 || l.size + r.size != bg.size) continue;
        l.size += r.size;
        r.size = 0;
        l.next = r.next;
        if (r.next >= 0) sym[r.next].prev = bg.left;
        add(l.prev, bg.left);
        add(bg.left, sym[bg.left].next);
    }

    // Every merged symbol is a vocabulary token by construction; single characters that
    // are not fall back to byte tokens.
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        const std::string_view s = std::string_view(text).substr(sym[i].offset, sym[i].size);
        const TokenId id = vocab_.lookup(s);
        if (id >= 0) out.push_back(id);
        else push_bytes(s, out);
    }
}

void SpmTokenizer::push_bytes(std::string_view bytes, std::vector<TokenId>& out) const {
    for (unsigned char c : bytes) {
        const TokenId id = byte_token_[c];
        if (id >= 0) out.push_back(id);
        else if (vocab_.unk() >= 0) out.push_back(vocab_.unk());
    }
}

std::string SpmTokenizer::token_bytes(TokenId id) const {
    check_id(id);
    const std::string& text = vocab_.text(id);
    if (vocab_.is_special(id)) return text;
    if (vocab_.type(id) == TokenType::Byte) {
        const int b = parse_byte_token(text);
        if (b >= 0) return std::string(1, static_cast<char>(b));
    }
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        if (text.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0) {
            out.push_back(' ');
            i += kEscapedSpace.size();
        } else {
            out.push_back(text[i++]);
        }
    }
    return out;
}

} // namespace arbor::tok
