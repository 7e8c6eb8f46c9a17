// Jinja's built-in filters and tests, and the Python string, dict and list methods chat
// templates call. Anything else is an error naming it, so a template that needs more
// falls back to the hard-coded chat families instead of rendering wrongly.
#include "jinja_value_ops.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace arbor::jinja {
namespace {

[[noreturn]] void fail(const std::string& what) { throw JinjaError(what); }

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
    auto drop = [&](char c) { return chars.is_string() ? chars.str().find(c) != std::string::npos : is_ws(c); };
    size_t b = 0, e = s.size();
    if (left)
        while (b < e && drop(s[b])) ++b;
    if (right)
        while (e > b && drop(s[e - 1])) --e;
    return s.substr(b, e - b);
}

std::string map_case(std::string s, int (*f)(int)) {
    for (char& c : s) c = char(f(static_cast<unsigned char>(c)));
    return s;
}

Value split(const std::string& s, const Value& sep, int64_t max_split) {
    Array out;
    if (sep.is_undefined() || sep.is_none()) {
        size_t i = 0;
        while (true) {
            while (i < s.size() && is_ws(s[i])) ++i;
            if (i >= s.size()) break;
            if (max_split >= 0 && int64_t(out.size()) == max_split) {
                out.emplace_back(strip(s.substr(i), Value(), false, true));
                break;
            }
            size_t j = i;
            while (j < s.size() && !is_ws(s[j])) ++j;
            out.emplace_back(s.substr(i, j - i));
            i = j;
        }
        return Value(std::move(out));
    }
    if (!sep.is_string() || sep.str().empty()) fail("split: the separator must be a non-empty string");
    size_t i = 0;
    while (true) {
        const size_t j = s.find(sep.str(), i);
        if (j == std::string::npos || (max_split >= 0 && int64_t(out.size()) == max_split)) {
            out.emplace_back(s.substr(i));
            break;
        }
        out.emplace_back(s.substr(i, j - i));
        i = j + sep.str().size();
    }
    return Value(std::move(out));
}

std::string replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    if (from.empty()) fail("replace: an empty search string is not supported");
    std::string out;
    size_t i = 0;
    for (int64_t done = 0; count < 0 || done < count; ++done) {
        const size_t j = s.find(from, i);
        if (j == std::string::npos) break;
        out.append(s, i, j - i);
        out += to;
        i = j + from.size();
    }
    out.append(s, i);
    return out;
}

bool affix(const std::string& s, const Value& what, bool prefix) {
    auto one = [&](const Value& a) {
        if (!a.is_string()) fail("startswith/endswith: expected a string, got a " + type_name(a));
        const std::string& t = a.str();
        return t.size() <= s.size() && (prefix ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0);
    };
    if (what.is_array()) return std::any_of(what.array().begin(), what.array().end(), one);
    return one(what);
}

const Value& arg(const CallArgs& a, size_t i, std::string_view name, const Value& fallback) {
    for (const auto& [k, v] : a.keyword)
        if (k == name) return v;
    return i < a.positional.size() ? a.positional[i] : fallback;
}

Value attribute(const Value& item, const std::string& path) {
    Value v = item;
    size_t i = 0;
    while (true) {
        const size_t dot = path.find('.', i);
        v = index(v, Value(path.substr(i, dot - i)));
        if (dot == std::string::npos) return v;
        i = dot + 1;
    }
}

Value select(const Value& seq, CallArgs& a, bool by_attribute, bool keep) {
    const Value none;
    Array out;
    const size_t test_at = by_attribute ? 1 : 0;
    const Value& test = arg(a, test_at, "", none);
    std::vector<Value> test_args;
    for (size_t i = test_at + 1; i < a.positional.size(); ++i) test_args.push_back(a.positional[i]);
    for (const Value& item : iterate(seq)) {
        const Value subject = by_attribute ? attribute(item, to_str(arg(a, 0, "", none))) : item;
        const bool passed = test.is_string() ? apply_test(test.str(), subject, test_args) : subject.truthy();
        if (passed == keep) out.push_back(item);
    }
    return Value(std::move(out));
}

} // namespace

bool apply_test(std::string_view name, const Value& v, const std::vector<Value>& args) {
    const Value none;
    const Value& a0 = args.empty() ? none : args[0];
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.type() == Value::Type::Bool;
    if (name == "true") return v.type() == Value::Type::Bool && v.as_bool();
    if (name == "false") return v.type() == Value::Type::Bool && !v.as_bool();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.type() == Value::Type::Int;
    if (name == "float") return v.type() == Value::Type::Float;
    if (name == "mapping") return v.is_object();
    if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
    if (name == "iterable") return v.is_array() || v.is_string() || v.is_object();
    if (name == "callable") return v.is_function();
    if (name == "odd" || name == "even") {
        if (v.type() != Value::Type::Int) fail("test '" + std::string(name) + "' needs an integer");
        return (v.as_int() % 2 != 0) == (name == "odd");  // INT64_MIN % 2 is defined
    }
    if (name == "divisibleby") {
        if (a0.as_int() == 0) fail("divisibleby 0");
        return a0.as_int() == -1 || v.as_int() % a0.as_int() == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return equals(v, a0);
    if (name == "ne" || name == "!=") return !equals(v, a0);
    if (name == "lt" || name == "<") return less(v, a0);
    if (name == "gt" || name == ">") return less(a0, v);
    if (name == "le" || name == "<=") return !less(a0, v);
    if (name == "ge" || name == ">=") return !less(v, a0);
    if (name == "in") return contains(a0, v);
    if (name == "sameas") return v.type() == a0.type() && equals(v, a0);
    if (name == "lower") return v.is_string() && map_case(v.str(), ::tolower) == v.str();
    if (name == "upper") return v.is_string() && map_case(v.str(), ::toupper) == v.str();
    fail("unknown test '" + std::string(name) + "'");
}

Value apply_filter(std::string_view name, const Value& v, CallArgs& a) {
    const Value none;
    auto need_string = [&]() -> const std::string& {
        if (!v.is_string()) fail("filter '" + std::string(name) + "' needs a string, not a " + type_name(v));
        return v.str();
    };
    if (name == "trim") return Value(strip(to_str(v), arg(a, 0, "chars", none), true, true));
    if (name == "length" || name == "count") return Value(int64_t(length(v)));
    if (name == "tojson") {
        const Value& indent = arg(a, 0, "indent", none);
        return Value(to_json(v, indent.is_none() || indent.is_undefined() ? -1 : int(indent.as_int())));
    }
    if (name == "string") return Value(to_str(v));
    if (name == "safe" || name == "e" || name == "escape") {
        if (name == "safe") return v;
        fail("filter 'escape' is not supported (chat templates render without autoescaping)");
    }
    if (name == "upper") return Value(map_case(need_string(), ::toupper));
    if (name == "lower") return Value(map_case(need_string(), ::tolower));
    if (name == "capitalize") {
        std::string s = map_case(need_string(), ::tolower);
        if (!s.empty()) s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
        return Value(std::move(s));
    }
    if (name == "default" || name == "d") {
        const bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
        if (v.is_undefined() || (boolean && !v.truthy())) return arg(a, 0, "default_value", Value(""));
        return v;
    }
    if (name == "items") {
        if (v.is_undefined()) return Value(Array{});
        return method(v, "items").function()(a);
    }
    if (name == "list") return Value(iterate(v));
    if (name == "first" || name == "last") {
        const Array items = iterate(v);
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        if (v.is_string()) return slice(v, none, none, Value(int64_t(-1)));
        Array items = iterate(v);
        std::reverse(items.begin(), items.end());
        return Value(std::move(items));
    }
    if (name == "join") {
        const std::string sep = to_str(arg(a, 0, "d", Value("")));
        const Value& attr = arg(a, 1, "attribute", none);
        std::string out;
        bool first = true;
        for (const Value& item : iterate(v)) {
            if (!first) out += sep;
            first = false;
            out += to_str(attr.is_undefined() ? item : attribute(item, to_str(attr)));
        }
        return Value(std::move(out));
    }
    if (name == "selectattr") return select(v, a, true, true);
    if (name == "rejectattr") return select(v, a, true, false);
    if (name == "select") return select(v, a, false, true);
    if (name == "reject") return select(v, a, false, false);
    if (name == "map") {
        const Value& attr = arg(a, 99, "attribute", none);
        Array out;
        for (const Value& item : iterate(v)) {
            if (!attr.is_undefined()) {
                out.push_back(attribute(item, to_str(attr)));
            } else {
                if (a.positional.empty() || !a.positional[0].is_string()) fail("map needs a filter name or attribute=");
                CallArgs rest;
                rest.positional.assign(a.positional.begin() + 1, a.positional.end());
                out.push_back(apply_filter(a.positional[0].str(), item, rest));
            }
        }
        return Value(std::move(out));
    }
    if (name == "replace") {
        return Value(replace(to_str(v), to_str(arg(a, 0, "old", none)), to_str(arg(a, 1, "new", none)),
                             arg(a, 2, "count", Value(int64_t(-1))).as_int()));
    }
    if (name == "int") {
        if (v.is_string()) {
            char* end = nullptr;
            const long long i = std::strtoll(v.str().c_str(), &end, 10);
            return Value(int64_t(end && *end == '\0' && !v.str().empty() ? i : 0));
        }
        return Value(v.is_number() ? v.as_int() : 0);
    }
    if (name == "float") return Value(v.is_number() ? v.as_float() : v.is_string() ? std::strtod(v.str().c_str(), nullptr) : 0.0);
    if (name == "abs") {
        if (v.type() == Value::Type::Int) {
            if (v.as_int() == INT64_MIN) fail("integer overflow in abs");
            return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
        }
        if (v.is_number()) return Value(v.as_float() < 0 ? -v.as_float() : v.as_float());
        fail("abs needs a number");
    }
    if (name == "unique") {
        Array out;
        for (const Value& item : iterate(v))
            if (!contains(Value(out), item)) out.push_back(item);
        return Value(std::move(out));
    }
    if (name == "dictsort") {
        if (!v.is_object()) fail("dictsort needs a dict");
        Array pairs;
        for (const auto& [k, item] : v.object()) pairs.emplace_back(Array{Value(k), item});
        std::stable_sort(pairs.begin(), pairs.end(),
                         [](const Value& x, const Value& y) { return less(x.array()[0], y.array()[0]); });
        return Value(std::move(pairs));
    }
    if (name == "sort") {
        Array items = iterate(v);
        const Value& attr = arg(a, 2, "attribute", none);
        const bool reverse = arg(a, 0, "reverse", Value(false)).truthy();
        auto key = [&](const Value& x) { return attr.is_undefined() ? x : attribute(x, to_str(attr)); };
        std::stable_sort(items.begin(), items.end(),
                         [&](const Value& x, const Value& y) { return reverse ? less(key(y), key(x)) : less(key(x), key(y)); });
        return Value(std::move(items));
    }
    fail("unknown filter '" + std::string(name) + "'");
}

Value method(const Value& target, const std::string& name) {
    auto bind = [&](auto f) { return Value(Function([target, f](CallArgs& a) { return f(target, a); })); };
    const Value none;
    if (target.is_string()) {
        if (name == "strip" || name == "lstrip" || name == "rstrip")
            return bind([name, none](const Value& t, CallArgs& a) {
                return Value(strip(t.str(), arg(a, 0, "chars", none), name != "rstrip", name != "lstrip"));
            });
        if (name == "split")
            return bind([none](const Value& t, CallArgs& a) {
                return split(t.str(), arg(a, 0, "sep", none), arg(a, 1, "maxsplit", Value(int64_t(-1))).as_int());
            });
        if (name == "startswith" || name == "endswith")
            return bind([name, none](const Value& t, CallArgs& a) { return Value(affix(t.str(), arg(a, 0, "", none), name == "startswith")); });
        if (name == "upper" || name == "lower" || name == "capitalize")
            return bind([name](const Value& t, CallArgs& a) { return apply_filter(name, t, a); });
        if (name == "replace")
            return bind([none](const Value& t, CallArgs& a) {
                return Value(replace(t.str(), to_str(arg(a, 0, "", none)), to_str(arg(a, 1, "", none)),
                                     arg(a, 2, "count", Value(int64_t(-1))).as_int()));
            });
        if (name == "find")
            return bind([none](const Value& t, CallArgs& a) {
                const size_t at = t.str().find(to_str(arg(a, 0, "", none)));
                return Value(at == std::string::npos ? int64_t(-1) : int64_t(length(Value(t.str().substr(0, at)))));
            });
        if (name == "join")
            return bind([](const Value& t, CallArgs& a) {
                CallArgs sep;
                sep.positional.push_back(t);
                return apply_filter("join", a.positional.empty() ? Value() : a.positional[0], sep);
            });
    } else if (target.is_object()) {
        if (name == "items")
            return bind([](const Value& t, CallArgs&) {
                Array pairs;
                for (const auto& [k, item] : t.object()) pairs.emplace_back(Array{Value(k), item});
                return Value(std::move(pairs));
            });
        if (name == "keys" || name == "values")
            return bind([name](const Value& t, CallArgs&) {
                Array out;
                for (const auto& [k, item] : t.object()) out.push_back(name == "keys" ? Value(k) : item);
                return Value(std::move(out));
            });
        if (name == "get")
            return bind([none](const Value& t, CallArgs& a) {
                const Value key = arg(a, 0, "", none);
                const Value* v = key.is_string() ? t.find(key.str()) : nullptr;
                return v ? *v : arg(a, 1, "", Value(nullptr));
            });
    } else if (target.is_array()) {
        if (name == "append")
            return bind([](const Value& t, CallArgs& a) {
                if (a.positional.size() != 1) fail("append takes one argument");
                t.array().push_back(a.positional[0]);
                return Value(nullptr);
            });
        if (name == "pop")
            return bind([](const Value& t, CallArgs& a) {
                if (t.array().empty()) fail("pop from an empty list");
                int64_t i = a.positional.empty() ? -1 : a.positional[0].as_int();
                const int64_t n = int64_t(t.array().size());
                if (i < 0) i += n;
                if (i < 0 || i >= n) fail("pop index out of range");
                Value v = t.array()[size_t(i)];
                t.array().erase(t.array().begin() + i);
                return v;
            });
    }
    return Value();
}

} // namespace arbor::jinja
