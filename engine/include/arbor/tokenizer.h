// Tokenizers read from GGUF metadata, by tokenizer.ggml.model: BPE ("gpt2", byte-level,
// with the pre-tokenizer that tokenizer.ggml.pre names; "gemma4", SentencePiece-style on
// UTF-8 characters), SentencePiece ("llama"), WordPiece ("bert"), Unigram ("t5") and RWKV's
// greedy longest match ("rwkv").
#pragma once

#include "arbor/gguf.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

using TokenId = int32_t;

class Tokenizer {
public:
    // Throws arbor::Error for a missing or inconsistent vocabulary, or an unknown
    // tokenizer model.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
    virtual ~Tokenizer() = default;

    // add_bos: prepend BOS when the vocabulary asks for it (tokenizer.ggml.add_bos_token).
    // parse_special: recognise special/control token texts such as "<|im_start|>";
    // otherwise they are tokenized as plain text. User-defined tokens (token type 4, words
    // added to the vocabulary, e.g. runs of spaces) are always recognised, as the
    // reference tokenizers do. Invalid UTF-8 in byte-level BPE input becomes U+FFFD.
    virtual std::vector<TokenId> encode(std::string_view text, bool add_bos, bool parse_special) const = 0;

    // The raw bytes of one token (special tokens render as their text). May be a
    // partial UTF-8 sequence; see StreamDecoder for safe streaming.
    virtual std::string token_bytes(TokenId id) const = 0;
    std::string decode(const std::vector<TokenId>& ids) const;

    virtual int32_t n_vocab() const = 0;
    virtual TokenId bos() const = 0;             // -1 when none
    virtual TokenId eos() const = 0;             // -1 when none
    virtual bool adds_bos() const = 0;
    virtual bool is_end_of_generation(TokenId id) const = 0;  // eos, eot, <|im_end|>, ...
    virtual bool is_special(TokenId id) const = 0;
    virtual std::optional<TokenId> find(std::string_view token_text) const = 0;
    // A problem found at load that the user should see (empty when none).
    virtual std::string load_warning() const { return {}; }
};

// Turns a stream of token ids into text pieces that never split a UTF-8 character:
// bytes of an incomplete character are held back until it completes.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
    std::string push(TokenId id);
    std::string flush();  // whatever is held back, invalid bytes replaced by U+FFFD

private:
    const Tokenizer& tokenizer_;
    std::string pending_;
};

} // namespace arbor
