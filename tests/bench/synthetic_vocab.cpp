#include "synthetic_vocab.h"

#include "unicode.h"  // engine/tokenizer: GPT-2's byte alphabet

#include <stdexcept>
#include <string>
#include <vector>

namespace arbor::synth {
namespace {

constexpr int kLetters = 26;
constexpr int32_t kNormal = 1, kControl = 3;  // tokenizer.ggml.token_type values

// SmolLM2-Instruct's template without its default system prompt.
constexpr const char* kChatMlTemplate =
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct VocabBuilder {
    std::vector<GgufValue> tokens, types, merges;
    size_t target;

    bool full() const { return tokens.size() >= target; }
    void token(std::string text, int32_t type) {
        tokens.push_back(test::gv::str(std::move(text)));
        types.push_back(test::gv::i32(type));
    }
    void merge(const std::string& left, const std::string& right) {
        merges.push_back(test::gv::str(left + " " + right));
        token(left + right, kNormal);
    }
};

// The lowercase word with base-26 digits of `index`, `length` letters.
std::string word(uint64_t index, int length) {
    std::string w(size_t(length), 'a');
    for (int i = length - 1; i >= 0; --i, index /= kLetters) w[size_t(i)] = char('a' + index % kLetters);
    return w;
}

} // namespace

void add_vocabulary(test::GgufWriter& w, int n_vocab) {
    if (n_vocab < kMinVocab || n_vocab > kMaxVocab)
        throw std::invalid_argument("vocabulary size " + std::to_string(n_vocab) + " is outside " +
                                    std::to_string(kMinVocab) + ".." + std::to_string(kMaxVocab));
    const auto& alphabet = tok::byte_alphabet();
    VocabBuilder v{{}, {}, {}, size_t(n_vocab - 3)};
    for (int b = 0; b < 256; ++b) v.token(alphabet.encode(uint8_t(b)), kNormal);
    const std::string space = alphabet.encode(uint8_t(' '));
    // Only words after a space merge: the only pair a merge can apply to is then the
    // word so far and its next letter, so BPE cannot take another path.
    uint64_t words = 1;
    for (int length = 1; !v.full(); ++length) {
        words *= kLetters;
        for (uint64_t i = 0; i < words && !v.full(); ++i) {
            const std::string text = space + word(i, length);
            v.merge(text.substr(0, text.size() - 1), text.substr(text.size() - 1));
        }
    }
    const auto endoftext = uint32_t(v.tokens.size());
    v.token("<|endoftext|>", kControl);
    v.token("<|im_start|>", kControl);
    const auto im_end = uint32_t(v.tokens.size());
    v.token("<|im_end|>", kControl);

    using test::gv::arr;
    w.add("tokenizer.ggml.model", test::gv::str("gpt2"));
    w.add("tokenizer.ggml.pre", test::gv::str("gpt-2"));
    w.add("tokenizer.ggml.tokens", arr(GgufType::String, std::move(v.tokens)));
    w.add("tokenizer.ggml.token_type", arr(GgufType::Int32, std::move(v.types)));
    w.add("tokenizer.ggml.merges", arr(GgufType::String, std::move(v.merges)));
    w.add("tokenizer.ggml.bos_token_id", test::gv::u32(endoftext));
    w.add("tokenizer.ggml.eos_token_id", test::gv::u32(im_end));
    w.add("tokenizer.ggml.add_bos_token", test::gv::boolean(false));
    w.add("tokenizer.chat_template", test::gv::str(kChatMlTemplate));
}

} // namespace arbor::synth
