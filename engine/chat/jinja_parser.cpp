// Recursive-descent parser for the Jinja subset, with Jinja's operator precedence:
// conditional < or < and < not < comparison < + - < ~ < * / // % < ** < unary < postfix,
// filters and tests binding to the unary operand.
#include "jinja_ast.h"
#include "jinja_lexer.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace arbor::jinja {
namespace {

using K = Token::Kind;

class Parser {
public:
    Parser(std::vector<Token> tokens, int max_nesting) : t_(std::move(tokens)), max_nesting_(max_nesting) {}

    std::unique_ptr<Template> run() {
        auto tpl = std::make_unique<Template>();
        std::string stopped_at;
        tpl->body = body({}, stopped_at);
        return tpl;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw JinjaError("template line " + std::to_string(peek().line) + ": " + what);
    }
    const Token& peek(size_t ahead = 0) const {
        const size_t i = p_ + ahead;
        return i < t_.size() ? t_[i] : t_.back();
    }
    const Token& next() {
        const Token& tok = peek();
        if (p_ < t_.size() - 1) ++p_;
        return tok;
    }
    bool is_op(std::string_view op, size_t ahead = 0) const {
        return peek(ahead).kind == K::Op && peek(ahead).text == op;
    }
    bool is_name(std::string_view name, size_t ahead = 0) const {
        return peek(ahead).kind == K::Name && peek(ahead).text == name;
    }
    bool accept_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool accept_name(std::string_view name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    void expect_op(std::string_view op) {
        if (!accept_op(op)) fail("expected '" + std::string(op) + "', found '" + describe(peek()) + "'");
    }
    void expect(K kind, const char* what) {
        if (peek().kind != kind) fail(std::string("expected ") + what + ", found '" + describe(peek()) + "'");
        next();
    }
    std::string name() {
        if (peek().kind != K::Name) fail("expected a name, found '" + describe(peek()) + "'");
        return next().text;
    }
    static std::string describe(const Token& tok) {
        switch (tok.kind) {
        case K::End: return "end of template";
        case K::BlockEnd: return "%}";
        case K::VarEnd: return "}}";
        default: return tok.text;
        }
    }

    struct Depth {
        Depth(Parser& p) : p_(p) {
            if (++p_.depth_ > p_.max_nesting_) p_.fail("nesting deeper than " + std::to_string(p_.max_nesting_));
        }
        ~Depth() { --p_.depth_; }
        Parser& p_;
    };

    // Statements until one of `stops` (a block tag name) or the end; `stopped_at` gets it.
    Body body(const std::vector<std::string_view>& stops, std::string& stopped_at) {
        Depth d(*this);
        Body out;
        while (true) {
            const Token& tok = peek();
            if (tok.kind == K::End) {
                if (!stops.empty()) fail("missing {% " + std::string(stops.front()) + " %}");
                return out;
            }
            if (tok.kind == K::Text) {
                auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::Text});
                s->text = next().text;
                out.push_back(s);
            } else if (tok.kind == K::VarBegin) {
                next();
                auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::Output});
                s->line = tok.line;
                s->expr = expression();
                expect(K::VarEnd, "}}");
                out.push_back(s);
            } else {
                next();
                if (peek().kind != K::Name) fail("expected a tag name after {%");
                const std::string tag = peek().text;
                for (std::string_view stop : stops)
                    if (tag == stop) {
                        next();
                        stopped_at = tag;
                        return out;
                    }
                out.push_back(statement());
            }
        }
    }

    std::shared_ptr<Stmt> statement() {
        const int line = peek().line;
        const std::string tag = name();
        std::shared_ptr<Stmt> s;
        if (tag == "if") s = if_statement();
        else if (tag == "for") s = for_statement();
        else if (tag == "set") s = set_statement();
        else if (tag == "macro") s = macro_statement();
        else if (tag == "break" || tag == "continue") {
            s = std::make_shared<Stmt>(Stmt{tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue});
            expect(K::BlockEnd, "%}");
        } else {
            fail("unsupported tag {% " + tag + " %}");
        }
        s->line = line;
        return s;
    }

    std::shared_ptr<Stmt> if_statement() {
        auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::If});
        ExprPtr cond = expression();
        expect(K::BlockEnd, "%}");
        while (true) {
            std::string stop;
            Body b = body({"endif", "elif", "else"}, stop);
            s->branches.emplace_back(cond, std::move(b));
            if (stop == "elif") {
                cond = expression();
                expect(K::BlockEnd, "%}");
                continue;
            }
            if (stop == "else") {
                expect(K::BlockEnd, "%}");
                s->else_body = body({"endif"}, stop);
            }
            expect(K::BlockEnd, "%}");
            return s;
        }
    }

    std::shared_ptr<Stmt> for_statement() {
        auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::For});
        s->names.push_back(name());
        while (accept_op(",")) s->names.push_back(name());
        if (!accept_name("in")) fail("expected 'in' in a for tag");
        s->expr = or_expression();  // a conditional here would swallow the loop filter
        if (accept_name("if")) s->filter = or_expression();
        expect(K::BlockEnd, "%}");
        std::string stop;
        s->body = body({"endfor", "else"}, stop);
        if (stop == "else") {
            expect(K::BlockEnd, "%}");
            s->else_body = body({"endfor"}, stop);
        }
        expect(K::BlockEnd, "%}");
        return s;
    }

    std::shared_ptr<Stmt> set_statement() {
        auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::Set});
        s->names.push_back(name());
        if (accept_op(".")) {
            auto obj = std::make_shared<Expr>(Expr{Expr::Kind::Name});
            obj->name = s->names[0];
            s->target_object = obj;
            s->names[0] = name();
        } else {
            while (accept_op(",")) s->names.push_back(name());
        }
        if (peek().kind == K::BlockEnd && !s->target_object && s->names.size() == 1) {
            next();
            s->kind = Stmt::Kind::SetBlock;
            std::string stop;
            s->body = body({"endset"}, stop);
            expect(K::BlockEnd, "%}");
            return s;
        }
        expect_op("=");
        s->expr = expression();
        if (s->names.size() > 1 || is_op(",")) s->expr = tuple_rest(s->expr);
        expect(K::BlockEnd, "%}");
        return s;
    }

    ExprPtr tuple_rest(ExprPtr first) {
        auto t = std::make_shared<Expr>(Expr{Expr::Kind::Tuple});
        t->args.push_back(first);
        while (accept_op(",")) t->args.push_back(expression());
        return t;
    }

    std::shared_ptr<Stmt> macro_statement() {
        auto s = std::make_shared<Stmt>(Stmt{Stmt::Kind::Macro});
        s->text = name();
        expect_op("(");
        while (!accept_op(")")) {
            s->names.push_back(name());
            s->defaults.push_back(accept_op("=") ? expression() : nullptr);
            if (!is_op(")")) expect_op(",");
        }
        expect(K::BlockEnd, "%}");
        std::string stop;
        s->body = body({"endmacro"}, stop);
        expect(K::BlockEnd, "%}");
        return s;
    }

    // ---- expressions ----

    static ExprPtr make(Expr::Kind kind, std::string name, std::vector<ExprPtr> args, int line) {
        auto e = std::make_shared<Expr>(Expr{kind});
        e->name = std::move(name);
        e->args = std::move(args);
        e->line = line;
        return e;
    }

    ExprPtr expression() {
        Depth d(*this);
        ExprPtr e = or_expression();
        if (accept_name("if")) {
            ExprPtr cond = or_expression();
            ExprPtr other = accept_name("else") ? expression() : nullptr;
            return make(Expr::Kind::Conditional, "", {e, cond, other}, peek().line);
        }
        return e;
    }

    // One left-associative level: operands from `operand`, joined by any of `ops`.
    template <typename Operand>
    ExprPtr binary_level(std::initializer_list<std::string_view> ops, Expr::Kind kind, Operand operand) {
        ExprPtr e = (this->*operand)();
        while (true) {
            const Token& tok = peek();
            const bool word = tok.kind == K::Name && (tok.text == "and" || tok.text == "or");
            if (!(tok.kind == K::Op || word) || std::find(ops.begin(), ops.end(), tok.text) == ops.end()) return e;
            const std::string op = next().text;
            e = make(kind, op, {e, (this->*operand)()}, tok.line);
        }
    }

    ExprPtr or_expression() { return binary_level({"or"}, Expr::Kind::Or, &Parser::and_expression); }
    ExprPtr and_expression() { return binary_level({"and"}, Expr::Kind::And, &Parser::not_expression); }

    ExprPtr not_expression() {
        if (accept_name("not")) {
            Depth d(*this);
            return make(Expr::Kind::Unary, "not", {not_expression()}, peek().line);
        }
        return comparison();
    }

    ExprPtr comparison() {
        ExprPtr e = additive();
        while (true) {
            std::string op;
            if (peek().kind == K::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                         peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
                op = next().text;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && is_name("in", 1)) {
                next();
                next();
                op = "not in";
            } else {
                return e;
            }
            e = make(Expr::Kind::Binary, op, {e, additive()}, peek().line);
        }
    }

    ExprPtr additive() { return binary_level({"+", "-"}, Expr::Kind::Binary, &Parser::concat); }
    ExprPtr concat() { return binary_level({"~"}, Expr::Kind::Binary, &Parser::multiplicative); }
    ExprPtr multiplicative() { return binary_level({"*", "/", "//", "%"}, Expr::Kind::Binary, &Parser::power); }
    ExprPtr power() { return binary_level({"**"}, Expr::Kind::Binary, &Parser::filtered_unary); }
    ExprPtr filtered_unary() { return unary(true); }

    // Jinja applies filters and tests after a unary minus: -3|abs is abs(-3).
    ExprPtr unary(bool with_filters = true) {
        Depth d(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const std::string op = next().text;
            e = make(Expr::Kind::Unary, op, {unary(false)}, peek().line);
        } else {
            e = postfix(primary());
        }
        return with_filters ? filters_and_tests(e) : e;
    }

    void call_arguments(Expr& e) {
        while (!accept_op(")")) {
            if (peek().kind == K::Name && is_op("=", 1)) {
                std::string key = next().text;
                next();
                e.kwargs.emplace_back(std::move(key), expression());
            } else {
                e.args.push_back(expression());
            }
            if (!is_op(")")) expect_op(",");
        }
    }

    ExprPtr filters_and_tests(ExprPtr e) {
        while (true) {
            if (accept_op("|")) {
                auto f = std::make_shared<Expr>(Expr{Expr::Kind::Filter});
                f->line = peek().line;
                f->name = name();
                f->args.push_back(e);
                if (accept_op("(")) call_arguments(*f);
                e = f;
            } else if (is_name("is")) {
                next();
                auto t = std::make_shared<Expr>(Expr{Expr::Kind::Test});
                t->line = peek().line;
                t->negated = accept_name("not");
                t->name = name();
                t->args.push_back(e);
                if (accept_op("(")) {
                    call_arguments(*t);
                } else if (peek().kind == K::String || peek().kind == K::Int || peek().kind == K::Float ||
                           (peek().kind == K::Name && !is_name("and") && !is_name("or") && !is_name("if") &&
                            !is_name("else") && !is_name("is"))) {
                    t->args.push_back(postfix(primary()));  // `is divisibleby 3`, `is sameas none`
                }
                e = t;
            } else {
                return e;
            }
        }
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            const int line = peek().line;
            if (accept_op(".")) {
                if (peek().kind == K::Int) {  // foo.0 is foo[0]
                    auto idx = std::make_shared<Expr>(Expr{Expr::Kind::Literal});
                    idx->value = Value(int64_t(std::strtoll(next().text.c_str(), nullptr, 10)));
                    e = make(Expr::Kind::Item, "", {e, idx}, line);
                } else {
                    e = make(Expr::Kind::Attr, name(), {e}, line);
                }
            } else if (accept_op("[")) {
                e = subscript(e, line);
            } else if (accept_op("(")) {
                auto c = std::make_shared<Expr>(Expr{Expr::Kind::Call});
                c->line = line;
                c->args.push_back(e);
                call_arguments(*c);
                e = c;
            } else {
                return e;
            }
        }
    }

    ExprPtr subscript(ExprPtr target, int line) {
        ExprPtr parts[3];
        int colons = 0;
        while (true) {
            if (accept_op("]")) break;
            if (accept_op(":")) {
                if (++colons > 2) fail("too many ':' in a subscript");
                continue;
            }
            if (parts[colons]) fail("expected ':' or ']' in a subscript");
            parts[colons] = expression();
        }
        if (colons == 0) {
            if (!parts[0]) fail("empty subscript []");
            return make(Expr::Kind::Item, "", {target, parts[0]}, line);
        }
        return make(Expr::Kind::Slice, "", {target, parts[0], parts[1], parts[2]}, line);
    }

    ExprPtr primary() {
        const Token& tok = peek();
        const int line = tok.line;
        auto literal = [&](Value v) {
            auto e = std::make_shared<Expr>(Expr{Expr::Kind::Literal});
            e->value = std::move(v);
            e->line = line;
            return e;
        };
        switch (tok.kind) {
        case K::String: {
            std::string s = next().text;
            while (peek().kind == K::String) s += next().text;  // adjacent literals join
            return literal(Value(std::move(s)));
        }
        case K::Int: return literal(Value(int64_t(std::strtoll(next().text.c_str(), nullptr, 10))));
        case K::Float: return literal(Value(std::strtod(next().text.c_str(), nullptr)));
        case K::Name: {
            const std::string n = next().text;
            if (n == "true" || n == "True") return literal(Value(true));
            if (n == "false" || n == "False") return literal(Value(false));
            if (n == "none" || n == "None") return literal(Value(nullptr));
            return make(Expr::Kind::Name, n, {}, line);
        }
        case K::Op:
            if (accept_op("(")) {
                if (accept_op(")")) return make(Expr::Kind::Tuple, "", {}, line);
                ExprPtr e = expression();
                if (is_op(",")) {
                    auto t = std::make_shared<Expr>(Expr{Expr::Kind::Tuple});
                    t->args.push_back(e);
                    while (accept_op(",") && !is_op(")")) t->args.push_back(expression());
                    e = t;
                }
                expect_op(")");
                return e;
            }
            if (accept_op("[")) {
                auto l = std::make_shared<Expr>(Expr{Expr::Kind::List});
                while (!accept_op("]")) {
                    l->args.push_back(expression());
                    if (!is_op("]")) expect_op(",");
                }
                return l;
            }
            if (accept_op("{")) {
                auto d = std::make_shared<Expr>(Expr{Expr::Kind::Dict});
                while (!accept_op("}")) {
                    d->args.push_back(expression());
                    expect_op(":");
                    d->args.push_back(expression());
                    if (!is_op("}")) expect_op(",");
                }
                return d;
            }
            break;
        default: break;
        }
        fail("unexpected '" + describe(tok) + "' in an expression");
    }

    std::vector<Token> t_;
    size_t p_ = 0;
    int depth_ = 0;
    int max_nesting_;
};

} // namespace

std::unique_ptr<Template> parse_template(std::string_view source, int max_nesting) {
    try {
        return Parser(lex(source), max_nesting).run();
    } catch (const JinjaError&) {
        throw;
    } catch (const std::exception& e) {
        throw JinjaError(std::string("the template could not be parsed: ") + e.what());
    }
}

} // namespace arbor::jinja
