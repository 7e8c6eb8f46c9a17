// WordPiece (tokenizer.ggml.model "bert"), as llama.cpp reads BERT-family vocabularies:
// the text is split into words at white space and around each punctuation mark, ASCII
// symbol and CJK ideograph (control characters dropped; lowercased and stripped of accents
// where the file's normalizer says so), and each word, behind a "▁" standing for the
// space before it, is cut greedily into the longest vocabulary pieces from its start. A
// word with a part no piece matches becomes the unknown token as a whole.
#include "vocab_tokenizer.h"

#include "unicode.h"

#include <spdlog/spdlog.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>

namespace arbor::tok {

namespace {

// The ideographs BERT's basic tokenizer treats as words of their own: the CJK blocks as
// Hugging Face's tokenizers list them (Extension E from 0x2B920, not 0x2B820, as there).
bool is_cjk_ideograph(char32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Canonical decomposition (NFD), so that accents become marks of their own.
std::u32string decomposed(const std::u32string& cps) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) return cps;
    icu::UnicodeString in;
    for (char32_t cp : cps) in.append(static_cast<UChar32>(cp));
    const icu::UnicodeString out = nfd->normalize(in, status);
    if (U_FAILURE(status)) return cps;
    std::u32string result;
    for (int32_t i = 0; i < out.length(); i = out.moveIndex32(i, 1)) result.push_back(char32_t(out.char32At(i)));
    return result;
}

} // namespace

WpmTokenizer::WpmTokenizer(const GgufFile& file) : VocabTokenizer(Vocab(file, true, 101, -1, 100)) {
    // Files written before the normalizer keys existed are uncased BERTs (bge, MiniLM,
    // nomic): the reference tokenizer lowercases and strips accents for them, as
    // llama.cpp did before it read the keys.
    lowercase_ = file.get_bool("tokenizer.ggml.normalizer.lowercase").value_or(true);
    strip_accents_ = file.get_bool("tokenizer.ggml.normalizer.strip_accents").value_or(lowercase_);
    for (TokenId id = 0; id < vocab_.size(); ++id)
        max_token_bytes_ = std::max(max_token_bytes_, vocab_.text(id).size());
    spdlog::debug("tokenizer: WordPiece, {} tokens, lowercase {}, strip accents {}", vocab_.size(), lowercase_,
                  strip_accents_);
}

std::vector<TokenId> WpmTokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    return encode_fragments(text, add_bos, parse_special,
                            [this](std::string_view piece, std::vector<TokenId>& out) { encode_text(piece, out); });
}

std::vector<std::string> WpmTokenizer::words(std::string_view text) const {
    std::u32string cps = decode_utf8(text);
    if (strip_accents_) cps = decomposed(cps);
    std::vector<std::string> out(1);
    for (char32_t cp : cps) {
        const CpFlags flags = cp_flags(cp);
        if (flags & kWhitespace) {
            if (!out.back().empty()) out.emplace_back();
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || u_charType(static_cast<UChar32>(cp)) == U_CONTROL_CHAR) continue;
        if (strip_accents_ && (flags & kMark)) continue;
        std::string c;
        append_utf8(c, lowercase_ ? char32_t(u_tolower(static_cast<UChar32>(cp))) : cp);
        if ((flags & kPunctuation) || (cp < 0x7F && (flags & kSymbol)) || is_cjk_ideograph(cp)) {
            if (!out.back().empty()) out.emplace_back();
            out.back() = std::move(c);
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    if (out.back().empty()) out.pop_back();
    return out;
}

void WpmTokenizer::encode_text(std::string_view text, std::vector<TokenId>& out) const {
    for (const std::string& word : words(text)) {
        const std::string marked = std::string(kEscapedSpace) + word;
        const size_t first = out.size();
        bool matched = true;
        for (size_t i = 0; i < marked.size() && matched;) {
            matched = false;
            for (size_t j = std::min(marked.size(), i + max_token_bytes_); j > i; --j) {
                const TokenId id = vocab_.lookup(std::string_view(marked).substr(i, j - i));
                if (id < 0) continue;
                out.push_back(id);
                i = j;
                matched = true;
                break;
            }
        }
        if (!matched) out.resize(first);
        if (out.size() == first) out.push_back(vocab_.unk());
    }
}

std::string WpmTokenizer::token_bytes(TokenId id) const {
    check_id(id);
    const std::string& text = vocab_.text(id);
    if (vocab_.is_special(id) || !text.starts_with(kEscapedSpace)) return text;
    return " " + text.substr(kEscapedSpace.size());
}

} // namespace arbor::tok
