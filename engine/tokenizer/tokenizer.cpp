#include "arbor/tokenizer.h"

#include "unicode.h"
#include "vocab_tokenizer.h"

namespace arbor {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
    const auto model = file.get_string("tokenizer.ggml.model");
    if (!model) throw Error("tokenizer: the model has no tokenizer.ggml.model");
    if (*model == "gpt2") {
        return std::make_unique<tok::BpeTokenizer>(file, file.get_string("tokenizer.ggml.pre").value_or(""));
    }
    // Gemma 4 names its SentencePiece-style BPE as a model of its own, with no pre-tokenizer.
    if (*model == "gemma4") return std::make_unique<tok::BpeTokenizer>(file, "gemma4");
    if (*model == "llama") return std::make_unique<tok::SpmTokenizer>(file);
    if (*model == "bert") return std::make_unique<tok::WpmTokenizer>(file);
    if (*model == "t5") return std::make_unique<tok::UgmTokenizer>(file);
    if (*model == "rwkv") return std::make_unique<tok::RwkvTokenizer>(file);
    throw Error("tokenizer: unsupported tokenizer model '" + *model + "' (supported: gpt2, gemma4, llama, bert, t5, rwkv)");
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids) const {
    std::string out;
    for (TokenId id : ids) out += token_bytes(id);
    return out;
}

std::string StreamDecoder::push(TokenId id) {
    pending_ += tokenizer_.token_bytes(id);
    size_t consumed = 0;
    std::string out = tok::sanitize_utf8(pending_, false, consumed);
    pending_.erase(0, consumed);
    return out;
}

std::string StreamDecoder::flush() {
    size_t consumed = 0;
    std::string out = tok::sanitize_utf8(pending_, true, consumed);
    pending_.clear();
    return out;
}

namespace tok {

std::optional<TokenId> VocabTokenizer::find(std::string_view token_text) const {
    const TokenId id = vocab_.lookup(token_text);
    if (id < 0) return std::nullopt;
    return id;
}

void VocabTokenizer::check_id(TokenId id) const {
    if (!vocab_.valid(id))
        throw Error("tokenizer: token id " + std::to_string(id) + " is outside the vocabulary (size " +
                    std::to_string(vocab_.size()) + ")");
}

} // namespace tok

} // namespace arbor
