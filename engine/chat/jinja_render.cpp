// Executes a parsed template: scopes as Jinja has them (a for loop's body and a macro
// call get their own; if does not), the loop variable, macros, and the globals chat
// templates use. Every loop iteration, macro call and printed piece counts as a step, so
// a hostile template ends with a JinjaError rather than running or growing without bound.
#include "jinja_ast.h"
#include "jinja_value_ops.h"

#include <cstdint>
#include <ctime>
#include <unordered_map>

namespace arbor::jinja {
namespace {

using Scope = std::shared_ptr<std::unordered_map<std::string, Value>>;

enum class Flow { Normal, Break, Continue };

[[noreturn]] void fail(int line, const std::string& what) {
    throw JinjaError("template line " + std::to_string(line) + ": " + what);
}

class Renderer {
public:
    Renderer(const Limits& limits, const Value& context) : limits_(limits), context_(context) {
        scopes_.push_back(std::make_shared<std::unordered_map<std::string, Value>>());
        add_globals();
    }

    std::string run(const Body& body) {
        exec(body);
        return std::move(out_);
    }

private:
    void step(int line) {
        if (++steps_ > limits_.max_steps)
            fail(line, "more than " + std::to_string(limits_.max_steps) + " steps (loop iterations, calls, output pieces)");
    }

    void emit(std::string_view s, int line) {
        step(line);
        if (out_.size() + s.size() > limits_.max_output_bytes)
            fail(line, "output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
        out_.append(s);
    }

    void add_globals() {
        auto& g = globals_;
        g["range"] = Value(Function([this](CallArgs& a) {
            if (a.positional.empty() || a.positional.size() > 3) throw JinjaError("range takes 1 to 3 arguments");
            int64_t start = 0, stop, stride = 1;
            if (a.positional.size() == 1) stop = a.positional[0].as_int();
            else {
                start = a.positional[0].as_int();
                stop = a.positional[1].as_int();
                if (a.positional.size() == 3) stride = a.positional[2].as_int();
            }
            if (stride == 0) throw JinjaError("range step cannot be zero");
            Array out;
            for (int64_t i = start; stride > 0 ? i < stop : i > stop;) {
                step(0);
                out.emplace_back(i);
                if (__builtin_add_overflow(i, stride, &i)) break;
            }
            return Value(std::move(out));
        }));
        auto make_object = [](CallArgs& a) {
            Object o;
            for (const Value& p : a.positional)
                if (p.is_object()) o.insert(o.end(), p.object().begin(), p.object().end());
            Value v(std::move(o));
            for (auto& [k, item] : a.keyword) v.set(k, item);
            return v;
        };
        g["namespace"] = Value(Function(make_object));
        g["dict"] = Value(Function(make_object));
        g["raise_exception"] = Value(Function([](CallArgs& a) -> Value {
            const std::string message = a.positional.empty() ? std::string() : to_str(a.positional[0]);
            throw JinjaError("the template raised an error: " + message, message);
        }));
        g["strftime_now"] = Value(Function([](CallArgs& a) {
            const std::string fmt = a.positional.empty() ? std::string() : to_str(a.positional[0]);
            const std::time_t now = std::time(nullptr);
            std::tm tm{};
            localtime_r(&now, &tm);
            char buf[256];
            const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
            return Value(std::string(buf, n));
        }));
    }

    Value lookup(const std::string& name) const {
        for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
            auto found = (*it)->find(name);
            if (found != (*it)->end()) return found->second;
        }
        if (const Value* v = context_.find(name)) return *v;
        auto g = globals_.find(name);
        return g != globals_.end() ? g->second : Value();
    }

    void assign(const std::string& name, Value v) { (*scopes_.back())[name] = std::move(v); }

    void unpack(const std::vector<std::string>& names, const Value& v, int line) {
        if (names.size() == 1) {
            assign(names[0], v);
            return;
        }
        if (!v.is_array() || v.array().size() != names.size())
            fail(line, "cannot unpack a " + type_name(v) + " into " + std::to_string(names.size()) + " names");
        for (size_t i = 0; i < names.size(); ++i) assign(names[i], v.array()[i]);
    }

    // ---- statements ----

    Flow exec(const Body& body) {
        for (const auto& s : body) {
            const Flow f = exec(*s);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt& s) {
        switch (s.kind) {
        case Stmt::Kind::Text: emit(s.text, s.line); return Flow::Normal;
        case Stmt::Kind::Output: emit(to_str(eval(*s.expr)), s.line); return Flow::Normal;
        case Stmt::Kind::If:
            for (const auto& [cond, body] : s.branches)
                if (eval(*cond).truthy()) return exec(body);
            return exec(s.else_body);
        case Stmt::Kind::For: return exec_for(s);
        case Stmt::Kind::Set:
            if (s.target_object) {
                const Value ns = eval(*s.target_object);
                if (!ns.is_object()) fail(s.line, "cannot set an attribute of a " + type_name(ns));
                ns.set(s.names[0], eval(*s.expr));
            } else {
                unpack(s.names, eval(*s.expr), s.line);
            }
            return Flow::Normal;
        case Stmt::Kind::SetBlock: assign(s.names[0], Value(capture(s.body))); return Flow::Normal;
        case Stmt::Kind::Macro: assign(s.text, macro(s)); return Flow::Normal;
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
        }
        return Flow::Normal;
    }

    std::string capture(const Body& body) {
        std::string saved;
        std::swap(saved, out_);
        try {
            exec(body);
        } catch (...) {
            std::swap(saved, out_);
            throw;
        }
        std::swap(saved, out_);
        return saved;
    }

    Flow exec_for(const Stmt& s) {
        Array items = iterate(eval(*s.expr));
        struct Pop {
            std::vector<Scope>& scopes;
            ~Pop() { scopes.pop_back(); }
        };
        scopes_.push_back(std::make_shared<std::unordered_map<std::string, Value>>());
        Pop pop{scopes_};
        if (s.filter) {
            Array kept;
            for (const Value& item : items) {
                step(s.line);
                unpack(s.names, item, s.line);
                if (eval(*s.filter).truthy()) kept.push_back(item);
            }
            items = std::move(kept);
        }
        const int64_t n = int64_t(items.size());
        for (int64_t i = 0; i < n; ++i) {
            step(s.line);
            unpack(s.names, items[size_t(i)], s.line);
            assign("loop", Value(Object{
                               {"index", Value(i + 1)},
                               {"index0", Value(i)},
                               {"revindex", Value(n - i)},
                               {"revindex0", Value(n - i - 1)},
                               {"first", Value(i == 0)},
                               {"last", Value(i == n - 1)},
                               {"length", Value(n)},
                               {"previtem", i > 0 ? items[size_t(i - 1)] : Value()},
                               {"nextitem", i + 1 < n ? items[size_t(i + 1)] : Value()},
                           }));
            if (exec(s.body) == Flow::Break) break;
        }
        if (n == 0) exec(s.else_body);
        return Flow::Normal;
    }

    Value macro(const Stmt& s) {
        const Stmt* def = &s;
        return Value(Function([this, def](CallArgs& a) {
            if (call_depth_ >= limits_.max_call_depth)
                fail(def->line, "macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
            step(def->line);
            auto params = std::make_shared<std::unordered_map<std::string, Value>>();
            for (size_t i = 0; i < def->names.size(); ++i) {
                Value v;
                if (i < a.positional.size()) v = a.positional[i];
                else if (def->defaults[i]) v = eval(*def->defaults[i]);
                (*params)[def->names[i]] = v;
            }
            for (auto& [k, v] : a.keyword) {
                if (std::find(def->names.begin(), def->names.end(), k) == def->names.end())
                    fail(def->line, "macro '" + def->text + "' has no parameter '" + k + "'");
                (*params)[k] = v;
            }
            std::vector<Scope> saved = {scopes_.front(), params};
            std::swap(saved, scopes_);
            ++call_depth_;
            std::string result;
            try {
                result = capture(def->body);
            } catch (...) {
                --call_depth_;
                std::swap(saved, scopes_);
                throw;
            }
            --call_depth_;
            std::swap(saved, scopes_);
            return Value(std::move(result));
        }));
    }

    // ---- expressions ----

    CallArgs arguments(const Expr& e, size_t first) {
        CallArgs a;
        for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i]));
        for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
        return a;
    }

    static std::string describe(const Expr& e) {
        if (e.kind == Expr::Kind::Name) return "'" + e.name + "'";
        if (e.kind == Expr::Kind::Attr) return describe(*e.args[0]) + "." + e.name;
        return "the value";
    }

    Value eval(const Expr& e) {
        try {
            return eval_unchecked(e);
        } catch (const JinjaError& err) {
            if (std::string_view(err.what()).substr(0, 14) == "template line ") throw;
            throw JinjaError("template line " + std::to_string(e.line) + ": " + err.what(), err.raised());
        }
    }

    Value eval_unchecked(const Expr& e) {
        switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: return lookup(e.name);
        case Expr::Kind::Attr: {
            const Value target = eval(*e.args[0]);
            if (target.is_undefined()) fail(e.line, describe(*e.args[0]) + " is undefined (reading ." + e.name + ")");
            if (target.is_object()) {
                if (e.name == "items" || e.name == "keys" || e.name == "values" || e.name == "get") return method(target, e.name);
                const Value* v = target.find(e.name);
                return v ? *v : Value();
            }
            return method(target, e.name);
        }
        case Expr::Kind::Item: {
            const Value target = eval(*e.args[0]);
            const Value key = eval(*e.args[1]);
            if (target.is_undefined()) fail(e.line, describe(*e.args[0]) + " is undefined (indexing it)");
            if (target.is_object() && key.is_string() && !target.find(key.str())) return method(target, key.str());
            return index(target, key);
        }
        case Expr::Kind::Slice: {
            auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value(); };
            return slice(eval(*e.args[0]), part(1), part(2), part(3));
        }
        case Expr::Kind::Call: {
            const Value f = eval(*e.args[0]);
            if (!f.is_function()) {
                if (f.is_undefined()) fail(e.line, describe(*e.args[0]) + " is undefined (calling it)");
                fail(e.line, describe(*e.args[0]) + " is a " + type_name(f) + ", not a function");
            }
            CallArgs a = arguments(e, 1);
            return f.function()(a);
        }
        case Expr::Kind::Filter: {
            const Value v = eval(*e.args[0]);
            CallArgs a = arguments(e, 1);
            return apply_filter(e.name, v, a);
        }
        case Expr::Kind::Test: {
            const Value v = eval(*e.args[0]);
            const CallArgs a = arguments(e, 1);
            return Value(apply_test(e.name, v, a.positional) != e.negated);
        }
        case Expr::Kind::Unary: {
            const Value v = eval(*e.args[0]);
            if (e.name == "not") return Value(!v.truthy());
            if (!v.is_number()) fail(e.line, "unary " + e.name + " needs a number, not a " + type_name(v));
            if (e.name == "+") return v;
            if (v.type() == Value::Type::Float) return Value(-v.as_float());
            if (v.as_int() == INT64_MIN) fail(e.line, "integer overflow in unary -");
            return Value(-v.as_int());
        }
        case Expr::Kind::Binary: {
            const Value a = eval(*e.args[0]);
            const Value b = eval(*e.args[1]);
            if (e.name == "in" || e.name == "not in") {
                // An undefined container iterates as empty in Jinja.
                if (b.is_undefined()) return Value(e.name == "not in");
            } else if ((a.is_undefined() || b.is_undefined()) && e.name != "~" && e.name != "==" && e.name != "!=")
                fail(e.line, "an undefined value in '" + e.name + "' (" + describe(*e.args[a.is_undefined() ? 0 : 1]) + ")");
            return binary(e.name, a, b);
        }
        case Expr::Kind::And: {
            Value a = eval(*e.args[0]);
            return a.truthy() ? eval(*e.args[1]) : a;
        }
        case Expr::Kind::Or: {
            Value a = eval(*e.args[0]);
            return a.truthy() ? a : eval(*e.args[1]);
        }
        case Expr::Kind::Conditional:
            if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
            return e.args[2] ? eval(*e.args[2]) : Value();
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            Array items;
            for (const auto& item : e.args) items.push_back(eval(*item));
            return Value(std::move(items));
        }
        case Expr::Kind::Dict: {
            Value d{Object{}};
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                const Value key = eval(*e.args[i]);
                if (!key.is_string()) fail(e.line, "dict keys must be strings here, not a " + type_name(key));
                d.set(key.str(), eval(*e.args[i + 1]));
            }
            return d;
        }
        }
        return Value();
    }

    const Limits& limits_;
    const Value& context_;
    std::unordered_map<std::string, Value> globals_;
    std::vector<Scope> scopes_;
    std::string out_;
    int64_t steps_ = 0;
    int call_depth_ = 0;
};

} // namespace

CompiledTemplate::CompiledTemplate(std::string_view source, Limits limits)
    : impl_(parse_template(source, limits.max_nesting)), limits_(limits) {}
CompiledTemplate::~CompiledTemplate() = default;
CompiledTemplate::CompiledTemplate(CompiledTemplate&&) noexcept = default;
CompiledTemplate& CompiledTemplate::operator=(CompiledTemplate&&) noexcept = default;

std::string CompiledTemplate::render(const Value& context) const {
    if (!context.is_object()) throw JinjaError("the template context must be a dict");
    try {
        return Renderer(limits_, context).run(impl_->body);
    } catch (const JinjaError&) {
        throw;
    } catch (const std::exception& e) {  // e.g. out of memory: still the template's failure
        throw JinjaError(std::string("the template could not be rendered: ") + e.what());
    }
}

} // namespace arbor::jinja
