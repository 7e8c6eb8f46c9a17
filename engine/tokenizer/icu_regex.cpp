#include "icu_regex.h"

#include "arbor/error.h"
#include "unicode.h"

#include <unicode/regex.h>
#include <unicode/unistr.h>

namespace arbor::tok {

RegexSubject::RegexSubject(const std::u32string& cps) {
    utf16_.reserve(cps.size());
    unit_of_cp_.reserve(cps.size() + 1);
    cp_of_unit_.reserve(cps.size() + 1);
    for (size_t i = 0; i < cps.size(); ++i) {
        unit_of_cp_.push_back(utf16_.size());
        const char32_t c = cps[i] <= 0x10FFFF && (cps[i] < 0xD800 || cps[i] > 0xDFFF) ? cps[i] : 0xFFFD;
        if (c < 0x10000) {
            utf16_.push_back(static_cast<char16_t>(c));
            cp_of_unit_.push_back(i);
        } else {
            utf16_.push_back(static_cast<char16_t>(0xD7C0 + (c >> 10)));
            utf16_.push_back(static_cast<char16_t>(0xDC00 | (c & 0x3FF)));
            cp_of_unit_.push_back(i);
            cp_of_unit_.push_back(i);
        }
    }
    unit_of_cp_.push_back(utf16_.size());
    cp_of_unit_.push_back(cps.size());
}

namespace {

// Rewrites \s, \S and a bare $ (see the header); everything else passes unchanged.
std::string to_icu_syntax(std::string_view p) {
    std::string out;
    int class_depth = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\' && i + 1 < p.size()) {
            const char n = p[++i];
            if (n == 's') out += "\\p{White_Space}";
            else if (n == 'S') out += "\\P{White_Space}";
            else out.append({c, n});
            continue;
        }
        if (c == '[') ++class_depth;
        else if (c == ']' && class_depth > 0) --class_depth;
        if (c == '$' && class_depth == 0) out += "\\z";
        else out.push_back(c);
    }
    return out;
}

} // namespace

struct IcuRegex::Compiled {
    std::unique_ptr<icu::RegexPattern> pattern;
};

IcuRegex::IcuRegex(std::string_view pattern_utf8)
    : icu_pattern_(to_icu_syntax(pattern_utf8)), compiled_(std::make_unique<Compiled>()) {
    UErrorCode status = U_ZERO_ERROR;
    UParseError where{};
    compiled_->pattern.reset(
        icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(icu_pattern_), 0, where, status));
    if (U_FAILURE(status) || !compiled_->pattern)
        throw Error("pre-tokenizer pattern '" + std::string(pattern_utf8) + "': " + u_errorName(status) +
                    " at offset " + std::to_string(where.offset));
}

IcuRegex::~IcuRegex() = default;
IcuRegex::IcuRegex(IcuRegex&&) noexcept = default;
IcuRegex& IcuRegex::operator=(IcuRegex&&) noexcept = default;

void IcuRegex::split(const RegexSubject& subject, const std::vector<std::pair<size_t, size_t>>& spans,
                     std::vector<std::pair<size_t, size_t>>& out) const {
    const std::u16string& text = subject.utf16();
    const icu::UnicodeString alias(false, text.data(), static_cast<int32_t>(text.size()));
    UErrorCode status = U_ZERO_ERROR;
    const std::unique_ptr<icu::RegexMatcher> m(compiled_->pattern->matcher(alias, status));
    if (U_FAILURE(status)) throw Error(std::string("pre-tokenizer: ") + u_errorName(status));
    for (const auto& [begin, end] : spans) {
        m->region(static_cast<int64_t>(subject.unit_of(begin)), static_cast<int64_t>(subject.unit_of(end)), status);
        size_t gap = begin;
        while (m->find(status) && U_SUCCESS(status)) {
            const size_t s = subject.cp_of(static_cast<size_t>(m->start(status)));
            const size_t e = subject.cp_of(static_cast<size_t>(m->end(status)));
            if (s > gap) out.emplace_back(gap, s);
            if (e > s) out.emplace_back(s, e);
            gap = s == e ? s : e;
        }
        if (U_FAILURE(status)) throw Error(std::string("pre-tokenizer: ") + u_errorName(status));
        if (gap < end) out.emplace_back(gap, end);
    }
}

} // namespace arbor::tok
