#include "regex.h"

#include "unicode.h"

namespace arbor::tok {

bool Regex::Class::matches(char32_t cp, uint8_t flags) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    const char32_t v = (flags & kWhitespace) ? U'\v' : cp;
    for (const auto& a : atoms) {
        const bool t = a.mask ? (flags & a.mask) != 0 : (v >= a.lo && v <= a.hi);
        if (t != a.invert) return !negated;
    }
    return negated;
}

namespace {

struct Frame {
    int32_t pc;
    size_t pos;
};

// Shared by nested lookahead runs; each run only touches frames above its own base.
thread_local std::vector<Frame> g_stack;

} // namespace

bool Regex::run(int32_t program, const RegexInput& in, size_t begin, size_t end, size_t pos,
                size_t& match_end) const {
    const Program& p = programs_[static_cast<size_t>(program)];
    auto& stack = g_stack;
    const size_t base = stack.size();
    int32_t pc = 0;
    while (true) {
        const Inst& inst = p[static_cast<size_t>(pc)];
        bool ok = true;
        switch (inst.op) {
        case Op::Char:
            ok = pos < end && classes_[static_cast<size_t>(inst.x)].matches(in.cps[pos], in.flags[pos]);
            if (ok) {
                ++pos;
                ++pc;
            }
            break;
        case Op::Split:
            stack.push_back({inst.y, pos});
            pc = inst.x;
            break;
        case Op::Jmp: pc = inst.x; break;
        case Op::Match:
            match_end = pos;
            stack.resize(base);
            return true;
        case Op::Begin:
            ok = pos == begin;
            ++pc;
            break;
        case Op::End:
            ok = pos == end;
            ++pc;
            break;
        case Op::Look:
        case Op::NegLook: {
            const Program& sub = programs_[static_cast<size_t>(inst.x)];
            bool found;
            if (sub.size() == 2 && sub[0].op == Op::Char) {
                found = pos < end &&
                        classes_[static_cast<size_t>(sub[0].x)].matches(in.cps[pos], in.flags[pos]);
            } else {
                size_t ignored = 0;
                found = run(inst.x, in, begin, end, pos, ignored);
            }
            ok = found == (inst.op == Op::Look);
            ++pc;
            break;
        }
        }
        if (!ok) {
            if (stack.size() == base) return false;
            pc = stack.back().pc;
            pos = stack.back().pos;
            stack.pop_back();
        }
    }
}

std::ptrdiff_t Regex::match_at(const RegexInput& in, size_t begin, size_t end, size_t pos) const {
    size_t match_end = 0;
    if (!run(0, in, begin, end, pos, match_end)) return -1;
    return static_cast<std::ptrdiff_t>(match_end - pos);
}

void Regex::split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
                  std::vector<std::pair<size_t, size_t>>& out) const {
    for (const auto& [begin, end] : spans) {
        size_t gap = begin;
        size_t pos = begin;
        while (pos < end) {
            const std::ptrdiff_t len = match_at(in, begin, end, pos);
            if (len <= 0) {  // no pattern in use matches the empty string at a real position
                ++pos;
                continue;
            }
            if (pos > gap) out.emplace_back(gap, pos);
            out.emplace_back(pos, pos + static_cast<size_t>(len));
            pos += static_cast<size_t>(len);
            gap = pos;
        }
        if (gap < end) out.emplace_back(gap, end);
    }
}

} // namespace arbor::tok
