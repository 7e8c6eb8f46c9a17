// A small backtracking regular-expression matcher over code points, for the
// pre-tokenizer split patterns. Supported: alternation, groups ((...), (?:...)),
// lookahead ((?=...), (?!...)), classes with ranges and negation, escapes \s \S \d \D
// \w \r \n \t \p{L|N|P} \P{...}, '.', quantifiers ? * + {m} {m,} {m,n} (greedy or
// lazy), anchors ^ and $ (start and end of the subject). Semantics follow ECMAScript
// (leftmost alternative first), which is what the reference tokenizer runs.
//
// Literals and ranges are compared after mapping non-ASCII whitespace to U+000B, like
// the reference, so a pattern range never matches such a character while \s does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::tok {

// The subject: code points with their cp_flags() bits, precomputed once per text.
struct RegexInput {
    const char32_t* cps = nullptr;
    const uint8_t* flags = nullptr;
};

class Regex {
public:
    // Throws arbor::Error for a pattern it cannot parse.
    explicit Regex(std::string_view pattern_utf8);

    // Length of the match starting exactly at `pos` within the subject [begin, end), or
    // -1 when none.
    std::ptrdiff_t match_at(const RegexInput& in, size_t begin, size_t end, size_t pos) const;

    // Splits each span of `spans` (consecutive [begin, end) ranges) into matches and the
    // text between them, as the reference does with regex iteration over each span.
    void split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
               std::vector<std::pair<size_t, size_t>>& out) const;

    struct Atom {
        char32_t lo = 0, hi = 0;  // range, used when mask == 0
        uint8_t mask = 0;         // flag bits: matches when any is set
        bool invert = false;
    };
    struct Class {
        std::vector<Atom> atoms;
        bool negated = false;
        uint64_t ascii[2] = {0, 0};  // precomputed answers for code points below 128
        bool matches(char32_t cp, uint8_t flags) const;
    };
    enum class Op : uint8_t { Char, Split, Jmp, Match, Begin, End, Look, NegLook };
    struct Inst {
        Op op;
        int32_t x = 0;  // Char: class; Split: preferred target; Jmp: target; Look: program
        int32_t y = 0;  // Split: other target
    };
    using Program = std::vector<Inst>;

private:
    friend class RegexCompiler;
    bool run(int32_t program, const RegexInput& in, size_t begin, size_t end, size_t pos,
             size_t& match_end) const;

    std::vector<Class> classes_;
    std::vector<Program> programs_;  // [0] is the main pattern, the rest lookahead bodies
};

} // namespace arbor::tok
