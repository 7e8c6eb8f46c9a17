#include "regex.h"

#include "arbor/error.h"
#include "unicode.h"

#include <string>

namespace arbor::tok {

namespace {

struct Node {
    enum class Kind { Alt, Seq, Char, Repeat, Begin, End, WordBoundary, NotWordBoundary, Look, NegLook } kind =
        Kind::Seq;
    std::vector<Node> kids;
    int32_t cls = -1;
    int min = 0, max = -1;  // Repeat; max < 0 is unbounded
    bool lazy = false;

    static Node of(Kind k) {
        Node n;
        n.kind = k;
        return n;
    }
};

// The Unicode classes \p{...} may name: general categories and the Han script.
CpFlags property_mask(const std::u32string& name) {
    static const std::pair<std::u32string_view, CpFlags> kProperties[] = {
        {U"L", kLetter},      {U"Lu", kUpper},  {U"Ll", kLower},       {U"Lt", kTitle},
        {U"Lm", kModifier},   {U"Lo", kOtherLetter}, {U"N", kNumber}, {U"Nd", kDigit},
        {U"P", kPunctuation}, {U"M", kMark},    {U"S", kSymbol},       {U"Han", kHan},
    };
    for (const auto& [n, mask] : kProperties)
        if (n == name) return mask;
    return 0;
}

std::string to_utf8(const std::u32string& s) {
    std::string out;
    for (char32_t c : s) append_utf8(out, c);
    return out;
}

bool nullable(const Node& n) {
    switch (n.kind) {
    case Node::Kind::Char: return false;
    case Node::Kind::Alt:
        for (const auto& k : n.kids) if (nullable(k)) return true;
        return n.kids.empty();
    case Node::Kind::Seq:
        for (const auto& k : n.kids) if (!nullable(k)) return false;
        return true;
    case Node::Kind::Repeat: return n.min == 0 || nullable(n.kids[0]);
    default: return true;
    }
}

} // namespace

// Parses the pattern into a tree, then emits backtracking programs from it.
class RegexCompiler {
public:
    RegexCompiler(Regex& re, std::string_view pattern) : re_(re), p_(decode_utf8(pattern)) {}

    void compile() {
        Node root = parse_alt();
        if (i_ != p_.size()) fail("unbalanced ')'");
        re_.nullable_ = nullable(root);
        re_.programs_.emplace_back();
        emit_program(root, 0);
    }

private:
    [[noreturn]] void fail(const char* what) const {
        throw Error("pre-tokenizer pattern '" + to_utf8(p_) + "': " + what + " at offset " +
                    std::to_string(i_));
    }
    bool at_end() const { return i_ >= p_.size(); }
    char32_t peek() const { return at_end() ? 0 : p_[i_]; }
    bool eat(char32_t c) {
        if (peek() != c || at_end()) return false;
        ++i_;
        return true;
    }

    Node parse_alt() {
        Node alt = Node::of(Node::Kind::Alt);
        alt.kids.push_back(parse_seq());
        while (eat(U'|')) alt.kids.push_back(parse_seq());
        if (alt.kids.size() == 1) return std::move(alt.kids[0]);
        return alt;
    }

    Node parse_seq() {
        Node seq = Node::of(Node::Kind::Seq);
        while (!at_end() && peek() != U'|' && peek() != U')') {
            Node atom = parse_atom();
            parse_quantifier(atom);
            seq.kids.push_back(std::move(atom));
        }
        return seq;
    }

    Node parse_atom() {
        const char32_t c = p_[i_++];
        switch (c) {
        case U'(': {
            Node::Kind kind = Node::Kind::Seq;
            if (eat(U'?')) {
                if (eat(U':')) kind = Node::Kind::Seq;
                else if (eat(U'=')) kind = Node::Kind::Look;
                else if (eat(U'!')) kind = Node::Kind::NegLook;
                else fail("unsupported group");
            }
            Node inner = parse_alt();
            if (!eat(U')')) fail("missing ')'");
            if (kind == Node::Kind::Seq) return inner;
            Node look = Node::of(kind);
            look.kids.push_back(std::move(inner));
            return look;
        }
        case U'[': return char_node(parse_class());
        case U'.': {
            Regex::Class cls;
            cls.negated = true;
            cls.atoms.push_back({U'\n', U'\n'});
            cls.atoms.push_back({U'\r', U'\r'});
            return char_node(std::move(cls));
        }
        case U'^': return Node::of(Node::Kind::Begin);
        case U'$': return Node::of(Node::Kind::End);
        case U'\\': {
            if (eat(U'b')) return Node::of(Node::Kind::WordBoundary);
            if (eat(U'B')) return Node::of(Node::Kind::NotWordBoundary);
            Regex::Class cls;
            parse_escape(cls);
            return char_node(std::move(cls));
        }
        case U'*': case U'+': case U'?': case U'{': case U')': case U']':
            --i_;
            fail("unexpected character");
        default: {
            Regex::Class cls;
            cls.atoms.push_back({c, c});
            return char_node(std::move(cls));
        }
        }
    }

    void parse_quantifier(Node& atom) {
        int min = 0, max = -1;
        if (eat(U'*')) {
        } else if (eat(U'+')) {
            min = 1;
        } else if (eat(U'?')) {
            max = 1;
        } else if (peek() == U'{' && !at_end()) {
            ++i_;
            min = parse_int();
            max = min;
            if (eat(U',')) max = peek() == U'}' ? -1 : parse_int();
            if (!eat(U'}')) fail("bad {m,n} quantifier");
            if (max >= 0 && max < min) fail("bad {m,n} bounds");
        } else {
            return;
        }
        if (atom.kind == Node::Kind::Begin || atom.kind == Node::Kind::End ||
            atom.kind == Node::Kind::WordBoundary || atom.kind == Node::Kind::NotWordBoundary)
            fail("quantified anchor");
        Node rep = Node::of(Node::Kind::Repeat);
        rep.min = min;
        rep.max = max;
        rep.lazy = eat(U'?');
        if (max < 0 && nullable(atom)) fail("unbounded repeat of an empty-matching group");
        rep.kids.push_back(std::move(atom));
        atom = std::move(rep);
    }

    int parse_int() {
        int v = 0;
        bool any = false;
        while (peek() >= U'0' && peek() <= U'9' && !at_end()) {
            v = v * 10 + static_cast<int>(p_[i_++] - U'0');
            if (v > 10000) fail("repeat count too large");
            any = true;
        }
        if (!any) fail("expected a number");
        return v;
    }

    // After a backslash: adds the escape's atoms to `cls`.
    void parse_escape(Regex::Class& cls) {
        if (at_end()) fail("trailing backslash");
        const char32_t c = p_[i_++];
        switch (c) {
        case U's': cls.atoms.push_back({0, 0, kWhitespace, false}); return;
        case U'S': cls.atoms.push_back({0, 0, kWhitespace, true}); return;
        case U'd': cls.atoms.push_back({0, 0, kDigit, false}); return;
        case U'D': cls.atoms.push_back({0, 0, kDigit, true}); return;
        case U'w': cls.atoms.push_back({0, 0, kWord, false}); return;
        case U'W': cls.atoms.push_back({0, 0, kWord, true}); return;
        case U'p': case U'P': {
            if (!eat(U'{')) fail("expected '{' after \\p");
            std::u32string name;
            while (!at_end() && peek() != U'}') name.push_back(p_[i_++]);
            if (!eat(U'}')) fail("missing '}'");
            const CpFlags mask = property_mask(name);
            if (!mask) fail("unsupported Unicode property");
            cls.atoms.push_back({0, 0, mask, c == U'P'});
            return;
        }
        case U'r': cls.atoms.push_back({U'\r', U'\r'}); return;
        case U'n': cls.atoms.push_back({U'\n', U'\n'}); return;
        case U't': cls.atoms.push_back({U'\t', U'\t'}); return;
        case U'f': cls.atoms.push_back({U'\f', U'\f'}); return;
        case U'v': cls.atoms.push_back({U'\v', U'\v'}); return;
        case U'0': cls.atoms.push_back({0, 0}); return;
        default:
            if ((c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z') || (c >= U'1' && c <= U'9'))
                fail("unsupported escape");
            cls.atoms.push_back({c, c});
            return;
        }
    }

    // After '[': parses up to and including ']'.
    Regex::Class parse_class() {
        Regex::Class cls;
        cls.negated = eat(U'^');
        bool first = true;
        while (true) {
            if (at_end()) fail("missing ']'");
            char32_t c = p_[i_];
            if (c == U']' && !first) {
                ++i_;
                break;
            }
            first = false;
            ++i_;
            if (c == U'\\') {
                const size_t before = cls.atoms.size();
                parse_escape(cls);
                const Regex::Atom a = cls.atoms.back();
                // A single-character escape may start a range (e.g. \x-\y is rare; \$ is not).
                if (cls.atoms.size() == before + 1 && a.mask == 0 && !a.invert && a.lo == a.hi &&
                    is_range_dash()) {
                    cls.atoms.pop_back();
                    add_range(cls, a.lo);
                }
                continue;
            }
            if (is_range_dash()) add_range(cls, c);
            else cls.atoms.push_back({c, c});
        }
        return cls;
    }

    bool is_range_dash() const {
        return i_ + 1 < p_.size() && p_[i_] == U'-' && p_[i_ + 1] != U']';
    }

    void add_range(Regex::Class& cls, char32_t lo) {
        ++i_;  // '-'
        char32_t hi = p_[i_++];
        if (hi == U'\\') {
            Regex::Class tmp;
            parse_escape(tmp);
            const Regex::Atom& a = tmp.atoms.back();
            if (tmp.atoms.size() != 1 || a.mask != 0 || a.invert || a.lo != a.hi) fail("bad range end");
            hi = a.lo;
        }
        if (hi < lo) fail("reversed range");
        cls.atoms.push_back({lo, hi});
    }

    Node char_node(Regex::Class cls) {
        for (char32_t c = 0; c < 128; ++c) {
            if (eval(cls, c, cp_flags(c))) cls.ascii[c >> 6] |= uint64_t{1} << (c & 63);
        }
        Node n = Node::of(Node::Kind::Char);
        n.cls = static_cast<int32_t>(re_.classes_.size());
        re_.classes_.push_back(std::move(cls));
        return n;
    }

    static bool eval(const Regex::Class& cls, char32_t v, CpFlags flags) {
        bool any = false;
        for (const auto& a : cls.atoms) {
            const bool t = a.mask ? (flags & a.mask) != 0 : (v >= a.lo && v <= a.hi);
            if (t != a.invert) {
                any = true;
                break;
            }
        }
        return any != cls.negated;
    }

    Regex::Program& prog(int32_t index) { return re_.programs_[static_cast<size_t>(index)]; }
    int32_t here(int32_t index) { return static_cast<int32_t>(prog(index).size()); }
    size_t push(int32_t index, Regex::Inst inst) {
        prog(index).push_back(inst);
        return prog(index).size() - 1;
    }

    void emit_program(const Node& root, int32_t index) {
        emit(root, index);
        push(index, {Regex::Op::Match});
    }

    void emit(const Node& n, int32_t pi) {
        using Op = Regex::Op;
        switch (n.kind) {
        case Node::Kind::Char: push(pi, {Op::Char, n.cls}); break;
        case Node::Kind::Begin: push(pi, {Op::Begin}); break;
        case Node::Kind::WordBoundary: push(pi, {Op::WordBoundary, 0}); break;
        case Node::Kind::NotWordBoundary: push(pi, {Op::WordBoundary, 1}); break;
        case Node::Kind::End: push(pi, {Op::End}); break;
        case Node::Kind::Seq:
            for (const auto& k : n.kids) emit(k, pi);
            break;
        case Node::Kind::Alt: {
            std::vector<size_t> jumps;
            for (size_t k = 0; k < n.kids.size(); ++k) {
                const bool last = k + 1 == n.kids.size();
                const size_t split = last ? 0 : push(pi, {Op::Split});
                if (!last) prog(pi)[split].x = here(pi);
                emit(n.kids[k], pi);
                if (!last) {
                    jumps.push_back(push(pi, {Op::Jmp}));
                    prog(pi)[split].y = here(pi);
                }
            }
            for (size_t j : jumps) prog(pi)[j].x = here(pi);
            break;
        }
        case Node::Kind::Repeat: {
            for (int k = 0; k < n.min; ++k) emit(n.kids[0], pi);
            if (n.max < 0) {
                const int32_t loop = here(pi);
                const size_t split = push(pi, {Op::Split});
                emit(n.kids[0], pi);
                push(pi, {Op::Jmp, loop});
                set_split(prog(pi)[split], loop + 1, here(pi), n.lazy);
            } else {
                std::vector<size_t> splits;
                for (int k = n.min; k < n.max; ++k) {
                    splits.push_back(push(pi, {Op::Split}));
                    emit(n.kids[0], pi);
                }
                const int32_t exit = here(pi);
                for (size_t s : splits) set_split(prog(pi)[s], static_cast<int32_t>(s) + 1, exit, n.lazy);
            }
            break;
        }
        case Node::Kind::Look:
        case Node::Kind::NegLook: {
            const auto sub = static_cast<int32_t>(re_.programs_.size());
            re_.programs_.emplace_back();
            emit_program(n.kids[0], sub);
            push(pi, {n.kind == Node::Kind::Look ? Op::Look : Op::NegLook, sub});
            break;
        }
        }
    }

    static void set_split(Regex::Inst& inst, int32_t body, int32_t exit, bool lazy) {
        inst.x = lazy ? exit : body;
        inst.y = lazy ? body : exit;
    }

    Regex& re_;
    std::u32string p_;
    size_t i_ = 0;
};

Regex::Regex(std::string_view pattern_utf8) {
    RegexCompiler(*this, pattern_utf8).compile();
    for (const Inst& inst : programs_[0])
        split_slot_.push_back(inst.op == Op::Split ? n_split_slots_++ : -1);
}

} // namespace arbor::tok
