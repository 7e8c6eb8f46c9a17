#include "regex.h"

#include "unicode.h"

namespace arbor::tok {

bool Regex::Class::matches(char32_t cp, CpFlags flags) const {
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

bool Regex::Visited::test_and_set(int32_t slot, size_t pos) {
    const size_t bit = static_cast<size_t>(slot) * width + (pos - begin);
    uint64_t& word = bits[bit >> 6];
    const uint64_t mask = uint64_t{1} << (bit & 63);
    const bool seen = (word & mask) != 0;
    word |= mask;
    return seen;
}

bool Regex::run(int32_t program, const RegexInput& in, size_t begin, size_t end, size_t pos,
                size_t& match_end, Visited* visited) const {
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
            if (visited && visited->test_and_set(split_slot_[static_cast<size_t>(pc)], pos)) {
                ok = false;
                break;
            }
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
        case Op::WordBoundary: {
            // The subject's bounds count as non-word characters on the outside.
            const bool word_before = pos > begin && (in.flags[pos - 1] & kWord);
            const bool word_after = pos < end && (in.flags[pos] & kWord);
            ok = (word_before != word_after) == (inst.x == 0);
            ++pc;
            break;
        }
        case Op::Look:
        case Op::NegLook: {
            const Program& sub = programs_[static_cast<size_t>(inst.x)];
            bool found;
            if (sub.size() == 2 && sub[0].op == Op::Char) {
                found = pos < end &&
                        classes_[static_cast<size_t>(sub[0].x)].matches(in.cps[pos], in.flags[pos]);
            } else {
                size_t ignored = 0;
                found = run(inst.x, in, begin, end, pos, ignored, nullptr);
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
    if (!run(0, in, begin, end, pos, match_end, nullptr)) return -1;
    return static_cast<std::ptrdiff_t>(match_end - pos);
}

void Regex::split(const RegexInput& in, const std::vector<std::pair<size_t, size_t>>& spans,
                  std::vector<std::pair<size_t, size_t>>& out) const {
    Visited visited;
    for (const auto& [begin, end] : spans) {
        visited.begin = begin;
        visited.width = end - begin + 1;
        visited.bits.assign((static_cast<size_t>(n_split_slots_) * visited.width + 63) / 64, 0);
        size_t gap = begin;
        size_t pos = begin;
        while (pos < end) {
            size_t match_end = pos;
            if (!run(0, in, begin, end, pos, match_end, nullable_ ? nullptr : &visited)) {
                ++pos;
                continue;
            }
            if (match_end == pos) {
                // An empty match (a pattern of lookaheads) only marks a split point.
                if (pos > gap) out.emplace_back(gap, pos);
                gap = pos++;
                continue;
            }
            if (pos > gap) out.emplace_back(gap, pos);
            out.emplace_back(pos, match_end);
            pos = match_end;
            gap = pos;
        }
        if (gap < end) out.emplace_back(gap, end);
    }
}

} // namespace arbor::tok
