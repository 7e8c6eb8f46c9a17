// A small backtracking regular-expression matcher over code points, for the
// pre-tokenizer split patterns. Supported: alternation, groups ((...), (?:...)),
// lookahead ((?=...), (?!...)), classes with ranges and negation, escapes \s \S \d \D
// \w \W \r \n \t, the Unicode classes \p{X} and \P{X} for X in L Lu Ll Lt Lm Lo N Nd
// P M S Han, '.', quantifiers ? * + {m} {m,} {m,n} (greedy or lazy), anchors ^ and $
// (start and end of the subject), \b and \B. Semantics follow ECMAScript (leftmost
// alternative first), which is what the reference tokenizer runs, with Unicode classes:
// \s is White_Space, \d is Nd, \w (and so \b) is UTS #18's word character.
//
// Literals and ranges are compared after mapping non-ASCII whitespace to U+000B, like
// the reference, so a pattern range never matches such a character while \s does.
#pragma once

#include "unicode.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::tok {

// The subject: code points with their cp_flags() bits, precomputed once per text.
struct RegexInput {
    const char32_t* cps = nullptr;
    const CpFlags* flags = nullptr;
};

class Regex {
public:
    // Throws arbor::Error for a pattern it cannot parse.
    explicit Regex(std::string_view pattern_utf8);

    // Length of the match starting exactly at `pos` within the subject [begin, end), or
    // -1 when none.
    std::ptrdiff_t match_at(const RegexInput& in, size_t begin, size_t end, size_t pos) const;

    // Splits each span of `spans` (consecutive [begin, end) ranges) into matches and the
    // text between them, as the reference does with regex iteration over each span. An
    // empty match only marks a split point: no piece is empty.
    void split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
               std::vector<std::pair<size_t, size_t>>& out) const;

    struct Atom {
        char32_t lo = 0, hi = 0;  // range, used when mask == 0
        CpFlags mask = 0;         // flag bits: matches when any is set
        bool invert = false;
    };
    struct Class {
        std::vector<Atom> atoms;
        bool negated = false;
        uint64_t ascii[2] = {0, 0};  // precomputed answers for code points below 128
        bool matches(char32_t cp, CpFlags flags) const;
    };
    enum class Op : uint8_t { Char, Split, Jmp, Match, Begin, End, WordBoundary, Look, NegLook };
    struct Inst {
        Op op;
        int32_t x = 0;  // Char: class; Split: preferred target; Jmp: target; Look: program;
                        // WordBoundary: 1 for \\B
        int32_t y = 0;  // Split: other target
    };
    using Program = std::vector<Inst>;

private:
    friend class RegexCompiler;

    // (split instruction, position) states of the main program already explored without
    // reaching a match. Failure there does not depend on where the attempt started, so
    // one set serves every start position of a span: a search over a span stays linear
    // in its length instead of quadratic (e.g. \s+$ on a long run of spaces).
    struct Visited {
        std::vector<uint64_t> bits;
        size_t begin = 0, width = 0;
        bool test_and_set(int32_t slot, size_t pos);
    };

    bool run(int32_t program, const RegexInput& in, size_t begin, size_t end, size_t pos,
             size_t& match_end, Visited* visited) const;

    std::vector<Class> classes_;
    std::vector<Program> programs_;  // [0] is the main pattern, the rest lookahead bodies
    std::vector<int32_t> split_slot_;  // per instruction of programs_[0]: slot, or -1
    int32_t n_split_slots_ = 0;
    // Visited is only sound when no match is empty: a state on a successful path is
    // marked too, and reaching it again from a later start could only end empty.
    bool nullable_ = false;
};

} // namespace arbor::tok
