#include "vocab.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace arbor::tok {

namespace {

const std::vector<GgufValue>& require_array(const GgufFile& file, std::string_view key, size_t min_size) {
    const GgufValue* v = file.find(key);
    if (!v) throw Error("tokenizer: missing " + std::string(key));
    const auto* arr = v->as_array();
    if (!arr) throw Error("tokenizer: " + std::string(key) + " is not an array");
    if (arr->size() < min_size)
        throw Error("tokenizer: " + std::string(key) + " has " + std::to_string(arr->size()) +
                    " entries, expected " + std::to_string(min_size));
    return *arr;
}

// Texts that end generation in chat models (matched exactly, as the reference does).
// <|return|> and <|call|> end gpt-oss's (harmony) final message and tool call.
constexpr std::array<std::string_view, 12> kEndOfGenerationTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<|end_of_text|>", "<EOT>", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>", "<end_of_utterance>",
    "<|return|>", "<|call|>",
};
// Texts that identify the end-of-turn token when tokenizer.ggml.eot_token_id is absent.
constexpr std::array<std::string_view, 9> kEndOfTurnTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>", "<end_of_utterance>",
};

bool looks_like_control(std::string_view t) {
    return t.size() > 4 && t.substr(0, 2) == "<|" && t.substr(t.size() - 2) == "|>";
}

constexpr uint8_t kLstrip = 1, kRstrip = 2;

// ASCII whitespace, independent of the process locale (Qt sets it from the environment).
bool is_ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

} // namespace

int parse_byte_token(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    auto hex = [](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string byte_token_text(uint8_t byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    return {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    if (from.empty()) return std::string(text);
    std::string out;
    out.reserve(text.size());
    for (size_t at = 0;;) {
        const size_t hit = text.find(from, at);
        out.append(text.substr(at, hit - at));
        if (hit == std::string_view::npos) return out;
        out.append(to);
        at = hit + from.size();
    }
}

Vocab::Vocab(const GgufFile& file, bool add_bos_default, TokenId default_bos, TokenId default_eos,
             TokenId default_unk) {
    const auto& tokens = require_array(file, "tokenizer.ggml.tokens", 1);
    const size_t n = tokens.size();
    if (n > static_cast<size_t>(INT32_MAX)) throw Error("tokenizer: vocabulary too large");
    text_.reserve(n);
    index_.reserve(n * 2);
    size_t duplicates = 0;
    for (size_t i = 0; i < n; ++i) {
        const std::string* s = tokens[i].as_string();
        if (!s) throw Error("tokenizer: tokenizer.ggml.tokens[" + std::to_string(i) + "] is not a string");
        text_.push_back(*s);
        if (!s->empty() && !index_.emplace(*s, static_cast<TokenId>(i)).second) ++duplicates;
    }
    if (duplicates) spdlog::warn("tokenizer: {} duplicate token texts; the first id of each is used", duplicates);

    type_.assign(n, TokenType::Normal);
    if (file.find("tokenizer.ggml.token_type")) {
        const auto& types = require_array(file, "tokenizer.ggml.token_type", n);
        for (size_t i = 0; i < n; ++i) {
            const auto t = types[i].as_int();
            if (!t) throw Error("tokenizer: tokenizer.ggml.token_type[" + std::to_string(i) + "] is not an integer");
            type_[i] = (*t >= 0 && *t <= 6) ? static_cast<TokenType>(*t) : TokenType::Undefined;
        }
    }
    if (file.find("tokenizer.ggml.scores")) {
        const auto& scores = require_array(file, "tokenizer.ggml.scores", n);
        score_.resize(n);
        for (size_t i = 0; i < n; ++i) {
            const auto s = scores[i].as_float();
            if (!s) throw Error("tokenizer: tokenizer.ggml.scores[" + std::to_string(i) + "] is not a number");
            score_[i] = static_cast<float>(*s);
        }
    }

    auto special_id = [&](std::string_view key, TokenId fallback) -> TokenId {
        if (!valid(fallback)) fallback = -1;
        const auto v = file.get_uint(key);
        if (!v) return fallback;
        if (*v >= n) {
            spdlog::warn("tokenizer: {} = {} is outside the vocabulary, ignored", key, *v);
            return fallback;
        }
        return static_cast<TokenId>(*v);
    };
    bos_ = special_id("tokenizer.ggml.bos_token_id", default_bos);
    eos_ = special_id("tokenizer.ggml.eos_token_id", default_eos);
    unk_ = special_id("tokenizer.ggml.unknown_token_id", default_unk);
    eot_ = special_id("tokenizer.ggml.eot_token_id", -1);
    eom_ = special_id("tokenizer.ggml.eom_token_id", -1);
    add_bos_ = file.get_bool("tokenizer.ggml.add_bos_token").value_or(add_bos_default);
    if (add_bos_ && bos_ < 0) {
        spdlog::warn("tokenizer: the model asks for BOS but has no BOS token; none is added");
        add_bos_ = false;
    }
    classify_special_tokens(file.get_string("general.name").value_or(""));
}

void Vocab::classify_special_tokens(const std::string& model_name) {
    const auto n = static_cast<TokenId>(text_.size());
    auto promote = [&](TokenId id) {
        if (type_[id] != TokenType::Control) {
            spdlog::debug("tokenizer: token {} '{}' treated as a control token", id, text_[id]);
            type_[id] = TokenType::Control;
        }
    };
    for (TokenId id = 0; id < n && eot_ < 0; ++id) {
        for (auto t : kEndOfTurnTexts)
            if (text_[id] == t) eot_ = id;
    }
    if (eom_ < 0) eom_ = lookup("<|eom_id|>");
    for (TokenId id : {eos_, eot_, eom_}) {
        if (id >= 0) eog_.insert(id);
    }
    for (auto t : kEndOfGenerationTexts) {
        const TokenId id = lookup(t);
        if (id >= 0) eog_.insert(id);
    }
    // In the harmony vocabulary (gpt-oss) <|end|> closes every message, the analysis before
    // the final answer included: a reply ends at <|return|> or <|call|> only. Told apart
    // from Phi-3's <|end|> by those two tokens, as llama.cpp does.
    if (const TokenId end = lookup("<|end|>"); end >= 0 && lookup("<|return|>") >= 0 && lookup("<|call|>") >= 0) {
        eog_.erase(end);
        if (eot_ == end) eot_ = -1;
    }
    for (TokenId id : eog_) promote(id);
    if (eot_ >= 0) promote(eot_);
    for (TokenId id = 0; id < n; ++id) {
        if (type_[id] == TokenType::Normal && looks_like_control(text_[id])) promote(id);
    }

    for (TokenId id = 0; id < n; ++id) {
        if (is_special(id) && !text_[id].empty()) special_by_length_.push_back(id);
    }
    std::stable_sort(special_by_length_.begin(), special_by_length_.end(),
                     [&](TokenId a, TokenId b) { return text_[a].size() > text_[b].size(); });

    // Phi-3's added tokens swallow the whitespace after them (its tokenizer marks them
    // rstrip); the reference keys this on the model name, and so do we.
    std::string lower = model_name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos) {
        strip_.assign(text_.size(), 0);
        for (TokenId id : special_by_length_) strip_[id] = kRstrip;
        if (TokenId id = lookup("</s>"); id >= 0) strip_[id] = kRstrip;
        for (auto t : {"<unk>", "<s>", "<|endoftext|>"}) {
            if (TokenId id = lookup(t); id >= 0) strip_[id] = 0;
        }
    }
}

bool Vocab::is_special(TokenId id) const {
    if (!valid(id)) return false;
    const TokenType t = type_[static_cast<size_t>(id)];
    return t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
}

std::vector<Fragment> Vocab::split_special(std::string_view text, bool parse_special) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back({-1, 0, text.size()});

    std::array<bool, 256> present{};
    for (unsigned char c : text) present[c] = true;

    std::vector<Fragment> next;
    for (TokenId id : special_by_length_) {
        if (!parse_special && type_[id] != TokenType::UserDefined) continue;
        const std::string& tok = text_[id];
        if (tok.size() > text.size() || !present[static_cast<unsigned char>(tok[0])]) continue;
        const uint8_t strip = strip_.empty() ? 0 : strip_[id];
        bool found = false;
        next.clear();
        for (const Fragment& f : frags) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            size_t b = f.begin;
            const size_t e = f.end;
            while (b < e) {
                const size_t m = text.substr(0, e).find(tok, b);
                if (m == std::string_view::npos) {
                    next.push_back({-1, b, e});
                    break;
                }
                found = true;
                size_t left_end = m;
                if (strip & kLstrip) {
                    while (left_end > b && is_ascii_space(text[left_end - 1])) --left_end;
                }
                if (left_end > b) next.push_back({-1, b, left_end});
                next.push_back({id, m, m + tok.size()});
                b = m + tok.size();
                if (strip & kRstrip) {
                    while (b < e && is_ascii_space(text[b])) ++b;
                }
            }
        }
        if (found) frags.swap(next);
    }
    return frags;
}

} // namespace arbor::tok
