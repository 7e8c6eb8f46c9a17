// The tokenizer kinds behind arbor::Tokenizer, sharing the vocabulary queries.
#pragma once

#include "arbor/tokenizer.h"
#include "byte_trie.h"
#include "pretokenizer.h"
#include "vocab.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arbor::tok {

class VocabTokenizer : public Tokenizer {
public:
    explicit VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

    int32_t n_vocab() const override { return vocab_.size(); }
    TokenId bos() const override { return vocab_.bos(); }
    TokenId eos() const override { return vocab_.eos(); }
    bool adds_bos() const override { return vocab_.add_bos(); }
    bool is_end_of_generation(TokenId id) const override { return vocab_.is_eog(id); }
    bool is_special(TokenId id) const override { return vocab_.is_special(id); }
    std::optional<TokenId> find(std::string_view token_text) const override;
    std::string load_warning() const override { return load_warning_; }

protected:
    void check_id(TokenId id) const;
    // BOS where asked for and adds_bos(), then each special token's id and, through
    // encode_text(piece, out), the ids of each piece of text between them.
    template <class EncodeText>
    std::vector<TokenId> encode_fragments(std::string_view text, bool add_bos, bool parse_special,
                                          EncodeText&& encode_text) const {
        std::vector<TokenId> out;
        out.reserve(text.size() / 3 + 2);
        if (add_bos && adds_bos()) out.push_back(vocab_.bos());
        for (const Fragment& f : vocab_.split_special(text, parse_special)) {
            if (f.token >= 0) out.push_back(f.token);
            else encode_text(text.substr(f.begin, f.end - f.begin), out);
        }
        return out;
    }

    Vocab vocab_;
    std::string load_warning_;
};

// BPE: byte-level (tokenizer.ggml.model "gpt2"), or SentencePiece-style on UTF-8
// characters where the pre-tokenizer family says so (PreTokenizerInfo::raw_utf8; Gemma 4's
// model "gemma4").
class BpeTokenizer final : public VocabTokenizer {
public:
    BpeTokenizer(const GgufFile& file, std::string_view pre_name);

    bool adds_bos() const override { return vocab_.add_bos() || (pre_.info().always_bos && vocab_.bos() >= 0); }
    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
    std::string token_bytes(TokenId id) const override;
    const PreTokenizerInfo& pre_tokenizer() const { return pre_.info(); }

private:
    BpeTokenizer(const GgufFile& file, PreTokenizer pre);
    void load_merges(const GgufFile& file);
    int32_t intern(std::string_view text);
    void encode_text(std::string_view text, std::vector<TokenId>& out) const;
    void encode_word(std::string_view bytes, std::vector<TokenId>& out) const;

    struct Merge {
        int32_t rank;
        int32_t result;  // piece id of the concatenation
    };

    PreTokenizer pre_;
    // Pieces: every string a merge can involve, interned so merging compares integers.
    TokenIndex piece_index_;
    std::vector<const std::string*> piece_text_;
    std::vector<TokenId> piece_token_;  // vocabulary id of each piece, -1 when none
    std::unordered_map<uint64_t, Merge> merges_;  // (left piece << 32 | right piece)
    std::array<int32_t, 256> byte_piece_{};
    std::vector<std::string> decoded_;  // token_bytes of every token
};

// SentencePiece (tokenizer.ggml.model "llama"): score-driven merging of characters.
class SpmTokenizer final : public VocabTokenizer {
public:
    explicit SpmTokenizer(const GgufFile& file);

    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
    std::string token_bytes(TokenId id) const override;

private:
    void encode_text(const std::string& text, std::vector<TokenId>& out) const;
    void push_bytes(std::string_view bytes, std::vector<TokenId>& out) const;

    bool add_space_prefix_ = true;
    std::array<TokenId, 256> byte_token_{};
};

// WordPiece (tokenizer.ggml.model "bert"): BERT-family vocabularies, whose pieces that
// start a word begin with "▁" (wpm_tokenizer.cpp).
class WpmTokenizer final : public VocabTokenizer {
public:
    explicit WpmTokenizer(const GgufFile& file);

    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
    std::string token_bytes(TokenId id) const override;

private:
    std::vector<std::string> words(std::string_view text) const;
    void encode_text(std::string_view text, std::vector<TokenId>& out) const;

    bool lowercase_ = false;
    bool strip_accents_ = false;
    size_t max_token_bytes_ = 0;
};

// Unigram (tokenizer.ggml.model "t5": T5, XLM-RoBERTa and other SentencePiece unigram
// vocabularies): text normalized with the file's precompiled charsmap, then cut into the
// pieces of highest total score (ugm_tokenizer.cpp).
class UgmTokenizer final : public VocabTokenizer {
public:
    explicit UgmTokenizer(const GgufFile& file);

    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
    std::string token_bytes(TokenId id) const override;

private:
    void load_charsmap(const GgufFile& file);
    size_t normalize_prefix(std::string_view text, size_t offset, std::string_view& out) const;
    std::string normalize(std::string_view text) const;
    void encode_text(std::string_view text, std::vector<TokenId>& out) const;

    ByteTrie pieces_;        // the tokens a segmentation may use
    ByteTrie user_defined_;  // user-defined tokens, which normalization leaves alone
    std::vector<bool> scoreless_;  // per token: user-defined in the file, scored 0
    std::vector<uint32_t> charsmap_nodes_;  // the charsmap's double-array trie
    std::string charsmap_strings_;          // and its NUL-terminated replacements
    bool add_space_prefix_ = false;
    bool remove_extra_whitespaces_ = false;
    float unknown_score_ = 0;
};

// RWKV's "world" tokenizer (tokenizer.ggml.model "rwkv"): the longest token matching the
// text's bytes, again and again; token texts are escaped byte strings (rwkv_tokenizer.cpp).
class RwkvTokenizer final : public VocabTokenizer {
public:
    explicit RwkvTokenizer(const GgufFile& file);

    bool adds_bos() const override { return false; }
    std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const override;
    std::string token_bytes(TokenId id) const override;

private:
    std::vector<std::string> bytes_;  // each token's unescaped bytes
    ByteTrie trie_;
};

} // namespace arbor::tok
