// A pre-tokenizer split pattern run by ICU's regular-expression engine over code points.
// Patterns are written as the families publish them (Perl/ECMAScript syntax, \p{...}
// Unicode properties, classes with && intersection) and keep the reference's meaning:
// \s and \S are Unicode White_Space (ICU's own \s leaves out U+000B and U+0085), and $
// is the end of the subject only (ICU's would also match before a final line break).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::tok {

// The text a split runs over, in UTF-16 as ICU reads it, with the code point index of
// each UTF-16 unit so matches come back in code points.
class RegexSubject {
public:
    explicit RegexSubject(const std::u32string& cps);
    const std::u16string& utf16() const { return utf16_; }
    size_t unit_of(size_t cp) const { return unit_of_cp_[cp]; }
    size_t cp_of(size_t unit) const { return cp_of_unit_[unit]; }

private:
    std::u16string utf16_;
    std::vector<size_t> unit_of_cp_;  // size: code points + 1
    std::vector<size_t> cp_of_unit_;  // size: units + 1
};

class IcuRegex {
public:
    // Throws arbor::Error naming the pattern and ICU's reason for a pattern it rejects.
    explicit IcuRegex(std::string_view pattern_utf8);
    ~IcuRegex();
    IcuRegex(IcuRegex&&) noexcept;
    IcuRegex& operator=(IcuRegex&&) noexcept;

    // Splits each span of `spans` (consecutive [begin, end) code point ranges, each its
    // own subject) into matches and the text between them. An empty match only marks a
    // split point (as split patterns made of lookaheads do); no empty piece is produced.
    void split(const RegexSubject& subject, const std::vector<std::pair<size_t, size_t>>& spans,
               std::vector<std::pair<size_t, size_t>>& out) const;

    // The pattern as given to ICU after the rewrites above.
    const std::string& icu_pattern() const { return icu_pattern_; }

private:
    std::string icu_pattern_;
    struct Compiled;  // ICU's pattern, kept out of this header
    std::unique_ptr<Compiled> compiled_;
};

} // namespace arbor::tok
