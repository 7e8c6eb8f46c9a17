#include "jinja_lexer.h"

#include "arbor/jinja.h"

#include <cctype>
#include <cstdint>

namespace arbor::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

[[noreturn]] void fail(int line, const std::string& what) {
    throw JinjaError("template line " + std::to_string(line) + ": " + what);
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

class Lexer {
public:
    explicit Lexer(std::string_view src) : s_(src) {}

    std::vector<Token> run() {
        std::string text;
        while (pos_ < s_.size()) {
            const size_t open = find_tag(pos_);
            if (open == std::string_view::npos) {
                text.append(s_.substr(pos_));
                pos_ = s_.size();
                break;
            }
            text.append(s_.substr(pos_, open - pos_));
            const char type = s_[open + 1];
            const char marker = open + 2 < s_.size() ? s_[open + 2] : '\0';
            if (marker == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (type != '{' && marker != '+') {
                strip_line_start(text, open);
            }
            if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), line_});
            text.clear();
            count_lines(pos_, open);
            pos_ = open + 2 + ((marker == '-' || marker == '+') ? 1 : 0);
            if (type == '#') skip_comment();
            else tag(type);
        }
        if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), line_});
        tokens_.push_back({Token::Kind::End, "", line_});
        return std::move(tokens_);
    }

private:
    size_t find_tag(size_t from) const {
        for (size_t p = s_.find('{', from); p != std::string_view::npos; p = s_.find('{', p + 1))
            if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
        return std::string_view::npos;
    }

    // lstrip_blocks: spaces and tabs between the line start and the tag are dropped.
    void strip_line_start(std::string& text, size_t open) const {
        size_t p = open;
        while (p > 0 && (s_[p - 1] == ' ' || s_[p - 1] == '\t')) --p;
        if (p != 0 && s_[p - 1] != '\n') return;
        size_t n = open - p;
        if (n > text.size()) n = text.size();
        text.resize(text.size() - n);
    }

    void count_lines(size_t from, size_t to) {
        for (size_t i = from; i < to; ++i)
            if (s_[i] == '\n') ++line_;
    }

    // After a closing marker: -X} strips all following whitespace, X} of a block or a
    // comment drops one newline (trim_blocks), +X} keeps everything.
    void after_close(bool minus, bool plus, bool block) {
        if (minus) {
            while (pos_ < s_.size() && is_space(s_[pos_])) {
                if (s_[pos_] == '\n') ++line_;
                ++pos_;
            }
        } else if (block && !plus) {
            if (pos_ < s_.size() && s_[pos_] == '\n') {
                ++pos_;
                ++line_;
            } else if (pos_ + 1 < s_.size() && s_[pos_] == '\r' && s_[pos_ + 1] == '\n') {
                pos_ += 2;
                ++line_;
            }
        }
    }

    void skip_comment() {
        const size_t close = s_.find("#}", pos_);
        if (close == std::string_view::npos) fail(line_, "unterminated comment {# ... #}");
        const bool minus = close > pos_ && s_[close - 1] == '-';
        const bool plus = close > pos_ && s_[close - 1] == '+';
        count_lines(pos_, close);
        pos_ = close + 2;
        after_close(minus, plus, true);
    }

    void tag(char type) {
        const bool block = type == '%';
        const int start_line = line_;
        tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
        const char close = block ? '%' : '}';
        int depth = 0;
        while (true) {
            while (pos_ < s_.size() && is_space(s_[pos_])) {
                if (s_[pos_] == '\n') ++line_;
                ++pos_;
            }
            if (pos_ >= s_.size())
                fail(start_line, block ? "unterminated tag {% ... %}" : "unterminated expression {{ ... }}");
            const char c = s_[pos_];
            const bool sign = c == '-' || c == '+';
            const size_t end_at = sign ? pos_ + 1 : pos_;
            if (depth == 0 && end_at + 1 < s_.size() && s_[end_at] == close && s_[end_at + 1] == '}') {
                pos_ = end_at + 2;
                tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
                after_close(c == '-', c == '+', block);
                return;
            }
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                const size_t b = pos_;
                while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
                tokens_.push_back({Token::Kind::Name, std::string(s_.substr(b, pos_ - b)), line_});
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                number();
            } else if (c == '\'' || c == '"') {
                string_literal(c);
            } else {
                static constexpr std::string_view two[] = {"==", "!=", "<=", ">=", "//", "**"};
                std::string op(1, c);
                for (std::string_view t : two)
                    if (s_.substr(pos_, 2) == t) op = std::string(t);
                if (std::string_view("+-*/%~|.,:()[]{}<>=!").find(c) == std::string_view::npos)
                    fail(line_, std::string("unexpected character '") + c + "' in a tag");
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                pos_ += op.size();
                tokens_.push_back({Token::Kind::Op, std::move(op), line_});
            }
        }
    }

    void number() {
        const size_t b = pos_;
        bool is_float = false;
        while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
        if (pos_ + 1 < s_.size() && s_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
            is_float = true;
            ++pos_;
            while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        }
        std::string digits;
        for (char ch : s_.substr(b, pos_ - b))
            if (ch != '_') digits += ch;
        tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, digits, line_});
    }

    void string_literal(char quote) {
        const int start_line = line_;
        std::string out;
        ++pos_;
        while (true) {
            if (pos_ >= s_.size()) fail(start_line, "unterminated string literal");
            const char c = s_[pos_++];
            if (c == quote) break;
            if (c == '\n') ++line_;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) fail(start_line, "unterminated string literal");
            const char e = s_[pos_++];
            switch (e) {
            case 'n': out += '\n'; break;
            case 't': out += '\t'; break;
            case 'r': out += '\r'; break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case '\n': ++line_; break;
            case 'u':
            case 'x': {
                const size_t n = e == 'u' ? 4 : 2;
                if (pos_ + n > s_.size()) fail(line_, "bad escape in a string literal");
                uint32_t cp = 0;
                for (size_t i = 0; i < n; ++i) {
                    const char h = s_[pos_ + i];
                    if (!std::isxdigit(static_cast<unsigned char>(h))) fail(line_, "bad escape in a string literal");
                    cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
                }
                pos_ += n;
                append_utf8(out, cp);
                break;
            }
            default:  // Python keeps unknown escapes as written
                out += '\\';
                out += e;
            }
        }
        tokens_.push_back({Token::Kind::String, std::move(out), line_});
    }

    std::string_view s_;
    size_t pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

} // namespace

std::vector<Token> lex(std::string_view source) { return Lexer(source).run(); }

} // namespace arbor::jinja
