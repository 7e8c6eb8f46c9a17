// A tokenizer for chat-template tests that round-trips exactly: every byte is its own
// token (ids 0-255) and a fixed list of special texts get ids from 256 on, recognised
// only when special parsing is on. Rendering ids back to text therefore shows exactly
// which template text the formatter produced.
#pragma once

#include "arbor/tokenizer.h"

#include <string>
#include <vector>

namespace arbor::test {

class ByteTokenizer : public Tokenizer {
public:
    ByteTokenizer(std::string bos_text, std::string eos_text, bool adds_bos = false)
        : bos_(id_of(bos_text)), eos_(id_of(eos_text)), adds_bos_(adds_bos) {}

    static const std::vector<std::string>& specials() {
        static const std::vector<std::string> list{
            "<|im_start|>", "<|im_end|>", "<|endoftext|>",
            "<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>",
            "<s>", "</s>",
            "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>",
            // gpt-oss (harmony): <|end|> closes every message, <|return|> and <|call|> a reply.
            "<|startoftext|>", "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>",
        };
        return list;
    }

    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override {
        std::vector<TokenId> out;
        if (add_bos && adds_bos_ && bos_ >= 0) out.push_back(bos_);
        size_t pos = 0;
        while (pos < text.size()) {
            TokenId hit = -1;
            if (parse_special) {
                for (size_t i = 0; i < specials().size(); ++i)
                    if (text.substr(pos).starts_with(specials()[i])) hit = TokenId(256 + i);
            }
            if (hit >= 0) {
                out.push_back(hit);
                pos += specials()[size_t(hit - 256)].size();
            } else {
                out.push_back(TokenId(static_cast<unsigned char>(text[pos])));
                ++pos;
            }
        }
        return out;
    }

    std::string token_bytes(TokenId id) const override {
        if (id >= 0 && id < 256) return std::string(1, char(id));
        if (id >= 256 && id < n_vocab()) return specials()[size_t(id - 256)];
        return {};
    }

    std::string render(const std::vector<TokenId>& ids) const {
        std::string s;
        for (TokenId id : ids) s += token_bytes(id);
        return s;
    }

    int32_t n_vocab() const override { return int32_t(256 + specials().size()); }
    TokenId bos() const override { return bos_; }
    TokenId eos() const override { return eos_; }
    bool adds_bos() const override { return adds_bos_; }
    bool is_end_of_generation(TokenId id) const override {
        const std::string t = token_bytes(id);
        return id == eos_ || t == "<|im_end|>" || t == "<|eot_id|>" || t == "<end_of_turn>" || t == "<|return|>" ||
               t == "<|call|>";
    }
    bool is_special(TokenId id) const override { return id >= 256; }
    std::optional<TokenId> find(std::string_view text) const override {
        const TokenId id = id_of(std::string(text));
        if (id >= 0) return id;
        return std::nullopt;
    }

    static TokenId id_of(const std::string& text) {
        for (size_t i = 0; i < specials().size(); ++i)
            if (specials()[i] == text) return TokenId(256 + i);
        if (text.size() == 1) return TokenId(static_cast<unsigned char>(text[0]));
        return -1;
    }

private:
    TokenId bos_, eos_;
    bool adds_bos_;
};

} // namespace arbor::test
