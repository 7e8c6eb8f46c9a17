#include "pretokenizer.h"

#include <spdlog/spdlog.h>

#include <array>

namespace arbor::tok {

namespace {

// The split patterns, per family, as the reference tokenizer runs them.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kMiniCpm5 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kJais2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// qwen2's without the contractions, so Turkish apostrophe suffixes stay attached.
constexpr std::string_view kUfakzeka =
    R"([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kExaoneMoe =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The original's possessive ?+ and ++ are greedy here, as in the reference.
constexpr std::string_view kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// Case-aware words: the originals' letter classes (the reference approximates them for
// std::regex, which has no \p{Lu}).
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kYoutuWords =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// The original's [X&&[^\p{Han}]] classes written as (?:(?!\p{Han})[X]).
constexpr std::string_view kKimiK2 =
    R"([\p{Han}]+|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])*(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])+(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kDeepseek3 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kSpark25 =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kAfmoe =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kBloom = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";
constexpr std::string_view kCjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?["
    "A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
    "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
    "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
    "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC"
    "\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3"
    "\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"
    "\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF"
    "\U0001E900-\U0001E943]+";
constexpr std::string_view kDeepseekLlmPunct = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";

constexpr std::string_view kCjkKana = "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+";
constexpr std::string_view kYoutuCjk =
    "[\uAC00-\uD7A3\u3131-\u318E]+|[\uFF01\u2026\u201C\u201D\u2018\u2019\u2014\uFF1A\uFF1B\uFF0C\u3001-\u303F\uFE30-\uFE4F]+"
    "|[\u3105-\u312F]+|[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+";
constexpr std::string_view kAfmoeScripts =
    "[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF\u0E40-\u0E7F"
    "\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF\u1100-\u11FF]+";
// Digit runs in groups of three from the right: AFMoE's (the reference's custom splitter)
// and Tiny Aya's (its tokenizer.json; a run followed by a word character stays whole).
// Both run as DigitGroups, in linear time: as patterns, each match's lookahead would scan
// the rest of the run (quadratic in its length).
constexpr std::string_view kDigitsFromRight = R"(\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N})))";
constexpr std::string_view kTinyAyaDigits = R"(\d{1,3}(?=(?:\d{3})*\b))";

struct Family {
    std::string_view name;
    std::vector<std::string_view> patterns;
    bool ignore_merges = false;
    bool add_bos = false;
    bool raw_utf8 = false;
    bool gemma4 = false;  // newline_words_whole and always_bos
};

const std::vector<Family>& families() {
    static const std::vector<Family> all = {
        {"default", {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}},
        {"gpt2", {kGpt2}},
        {"llama3", {kLlama3}, true, true},
        {"llama3-merging", {kLlama3}},
        {"glm4", {kLlama3}, true},
        {"jais2", {kJais2}},
        {"minicpm5", {R"(\p{N}{1,3})", kMiniCpm5}, true},
        {"qwen2", {kQwen2}},
        {"qwen35", {kQwen35}},
        {"ufakzeka", {kUfakzeka}},
        {"laguna", {R"([^\n]+|[\n]+)", kQwen2}},
        {"exaone-moe", {kExaoneMoe}},
        {"starcoder", {R"(\p{N})", kGpt2}},
        {"falcon", {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}},
        {"deepseek-llm",
         {"[\r\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, R"(\s+$)", kCjk, R"(\p{N}+)"}},
        {"deepseek-coder", {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}},
        {"deepseek-v3", {R"(\p{N}{1,3})", kCjkKana, kDeepseek3}},
        {"spark2_5", {R"(\p{N}{1,3})", kCjkKana, kSpark25, R"(\p{N})"}},
        {"youtu", {kYoutuCjk, kYoutuWords}, true},
        {"bloom", {kBloom}},
        {"viking", {kBloom, R"(\p{N})"}},
        {"chameleon",
         {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\t\n]|    |  )", R"(\p{N})",
          R"([\p{P}!-/:-@\[-`{-~])", kGpt2},
         false, true},
        {"seed-coder", {kSeedCoder}},
        {"bailingmoe", {kBailing}},
        {"tekken", {kTekken}, true, true},
        {"gpt-4o", {kGpt4o}},
        {"granite-embed-multi", {kGpt4o}, true},
        {"tiny-aya", {kTinyAyaDigits, kGpt4o}},
        {"kimi-k2", {kKimiK2}},
        {"superbpe", {R"(\p{N}+)", R"((?=(\d{3})+(?!\d)))"}},
        {"afmoe", {kDigitsFromRight, kAfmoeScripts, kAfmoe}},
        // SentencePiece-style BPE: lines and runs of newlines are the words.
        {"gemma4", {R"([^\n]+|[\n]+)"}, false, true, true, true},
        {"sarvam-moe", {R"([^\n]+|[\n]+)"}, false, false, true},
    };
    return all;
}

// tokenizer.ggml.pre names -> family, following the reference's grouping.
std::string_view family_of(std::string_view pre) {
    struct Alias {
        std::string_view family;
        std::vector<std::string_view> names;
    };
    static const std::vector<Alias> aliases = {
        {"default", {"default"}},
        {"llama3", {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                    "jina-v5-nano"}},
        {"llama3-merging", {"dbrx", "smaug-bpe", "chatglm-bpe"}},
        {"glm4", {"glm4", "glm5"}},
        {"jais2", {"jais-2"}},
        {"minicpm5", {"minicpm5"}},
        {"gpt2", {"gpt2", "gpt-2", "mpt", "phi-2", "olmo", "jais", "trillion", "granite-docling", "jina-es",
                  "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe",
                  "gigachat", "a.x-4.0", "mellum", "exaone4", "modern-bert"}},
        {"qwen2", {"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan", "kormo", "f2llmv2",
                   "solar-open", "grok-2"}},
        {"qwen35", {"qwen35"}},
        {"ufakzeka", {"ufakzeka"}},
        {"laguna", {"laguna"}},
        {"exaone-moe", {"exaone-moe"}},
        {"starcoder", {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b",
                       "mellum2"}},
        {"falcon", {"falcon"}},
        {"deepseek-llm", {"deepseek-llm"}},
        {"deepseek-coder", {"deepseek-coder"}},
        {"deepseek-v3", {"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}},
        {"spark2_5", {"spark2_5"}},
        {"youtu", {"youtu"}},
        {"bloom", {"bloom", "poro-chat", "gpt3-finnish"}},
        {"viking", {"viking"}},
        {"chameleon", {"chameleon"}},
        {"seed-coder", {"seed-coder"}},
        {"bailingmoe", {"bailingmoe", "bailingmoe2", "llada-moe"}},
        {"tekken", {"tekken"}},
        {"gpt-4o", {"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"}},
        {"granite-embed-multi", {"granite-embed-multi-97m"}},
        {"tiny-aya", {"tiny_aya", "cohere2moe"}},
        {"kimi-k2", {"kimi-k2"}},
        {"superbpe", {"superbpe"}},
        {"afmoe", {"afmoe"}},
        {"gemma4", {"gemma4", "granite-embed-multi-311m"}},
        {"sarvam-moe", {"sarvam-moe"}},
    };
    for (const auto& a : aliases)
        for (auto n : a.names)
            if (n == pre) return a.family;
    return {};
}

} // namespace

void DigitGroups::split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
                        std::vector<std::pair<size_t, size_t>>& out) const {
    for (const auto& [begin, end] : spans) {
        size_t gap = begin;
        size_t pos = begin;
        while (pos < end) {
            if (!(in.flags[pos] & digit)) {
                ++pos;
                continue;
            }
            size_t run_end = pos;
            while (run_end < end && (in.flags[run_end] & digit)) ++run_end;
            // \b after the run: the subject's end or a character that is not a word one.
            if (!needs_boundary || run_end == end || !(in.flags[run_end] & kWord)) {
                if (pos > gap) out.emplace_back(gap, pos);
                size_t group = (run_end - pos) % 3 ? (run_end - pos) % 3 : 3;
                for (; pos < run_end; pos += group, group = 3) out.emplace_back(pos, pos + group);
                gap = run_end;
            }
            pos = run_end;
        }
        if (gap < end) out.emplace_back(gap, end);
    }
}

PreTokenizer::PreTokenizer(std::string_view pre_name) {
    std::string_view family;
    if (pre_name.empty()) {
        warning_ = "the model names no pre-tokenizer (tokenizer.ggml.pre): using the default splitting; "
                   "tokenization may differ from the model's";
        family = "default";
    } else {
        family = family_of(pre_name);
        if (family.empty()) {
            warning_ = "unknown pre-tokenizer '" + std::string(pre_name) +
                       "': using gpt2's splitting; tokenization may differ from the model's";
            family = "gpt2";
        }
    }
    if (!warning_.empty()) spdlog::warn("tokenizer: {}", warning_);
    for (const auto& f : families()) {
        if (f.name != family) continue;
        info_.family = std::string(f.name);
        info_.ignore_merges = f.ignore_merges;
        info_.add_bos = f.add_bos;
        info_.raw_utf8 = f.raw_utf8;
        info_.newline_words_whole = info_.always_bos = f.gemma4;
        info_.patterns = f.patterns;
        for (auto p : f.patterns) {
            if (p == kDigitsFromRight) steps_.push_back(DigitGroups{kNumber, false});
            else if (p == kTinyAyaDigits) steps_.push_back(DigitGroups{kDigit, true});
            else steps_.push_back(Regex(p));
        }
        break;
    }
}

std::vector<std::pair<size_t, size_t>> PreTokenizer::split(const std::u32string& cps,
                                                           const std::vector<CpFlags>& flags) const {
    std::vector<std::pair<size_t, size_t>> spans{{0, cps.size()}};
    if (cps.empty()) return {};
    const RegexInput in{cps.data(), flags.data()};
    std::vector<std::pair<size_t, size_t>> next;
    for (const auto& step : steps_) {
        next.clear();
        next.reserve(spans.size() * 2);
        if (const auto* re = std::get_if<Regex>(&step)) re->split(in, spans, next);
        else std::get<DigitGroups>(step).split(in, spans, next);
        spans.swap(next);
    }
    return spans;
}

} // namespace arbor::tok
