// Values with Python's semantics: truthiness, str/repr/json printing, comparison,
// arithmetic, and string indexing on code points (Python strings are code points; ours
// are UTF-8 bytes).
#include "jinja_value_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>

namespace arbor::jinja {

Value* Value::find(std::string_view key) const {
    if (type_ != Type::Object) return nullptr;
    for (auto& [k, v] : *object_)
        if (k == key) return &v;
    return nullptr;
}

void Value::set(const std::string& key, Value v) const {
    if (Value* slot = find(key)) *slot = std::move(v);
    else object_->emplace_back(key, std::move(v));
}

bool Value::truthy() const {
    switch (type_) {
    case Type::Undefined:
    case Type::None: return false;
    case Type::Bool:
    case Type::Int: return int_ != 0;
    case Type::Float: return float_ != 0;
    case Type::String: return !string_->empty();
    case Type::Array: return !array_->empty();
    case Type::Object: return !object_->empty();
    case Type::Function: return true;
    }
    return false;
}

namespace {

[[noreturn]] void type_error(const std::string& what) { throw JinjaError(what); }

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[40];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    std::string s = buf;
    // Python writes 1e+16 as 1e+16 but 100.0 as 100.0: exponent forms stay, plain
    // integers gain ".0".
    const size_t e = s.find('e');
    if (e != std::string::npos) {
        std::string mant = s.substr(0, e), exp = s.substr(e + 1);
        const char sign = exp[0];
        exp = exp.substr(1);
        while (exp.size() > 2 && exp[0] == '0') exp.erase(0, 1);
        const int exponent = std::atoi(exp.c_str()) * (sign == '-' ? -1 : 1);
        if (exponent >= -4 && exponent < 16) {
            std::snprintf(buf, sizeof buf, "%.17f", d);
            s = buf;  // rare: %g chose an exponent Python would not; fall back to fixed
            while (s.back() == '0') s.pop_back();
            if (s.back() == '.') s += '0';
            return s;
        }
        return mant + "e" + sign + exp;
    }
    if (s.find('.') == std::string::npos) s += ".0";
    return s;
}

std::string quote_python(const std::string& s) {
    const bool use_double = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = use_double ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == q || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += char(c);
    }
    return out + q;
}

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += char(c);
            }
        }
    }
    out += '"';
}

void json(std::string& out, const Value& v, int indent, int level) {
    auto newline = [&](int lvl) {
        if (indent < 0) return;
        out += '\n';
        out.append(size_t(indent * lvl), ' ');
    };
    const char* comma = indent < 0 ? ", " : ",";
    switch (v.type()) {
    case Value::Type::None: out += "null"; return;
    case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Type::Int: out += std::to_string(v.as_int()); return;
    case Value::Type::Float: {
        const double d = v.as_float();
        out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : float_repr(d);
        return;
    }
    case Value::Type::String: json_string(out, v.str()); return;
    case Value::Type::Array: {
        if (v.array().empty()) {
            out += "[]";
            return;
        }
        out += '[';
        bool first = true;
        for (const Value& item : v.array()) {
            if (!first) out += comma;
            first = false;
            newline(level + 1);
            json(out, item, indent, level + 1);
        }
        newline(level);
        out += ']';
        return;
    }
    case Value::Type::Object: {
        if (v.object().empty()) {
            out += "{}";
            return;
        }
        out += '{';
        bool first = true;
        for (const auto& [k, item] : v.object()) {
            if (!first) out += comma;
            first = false;
            newline(level + 1);
            json_string(out, k);
            out += ": ";
            json(out, item, indent, level + 1);
        }
        newline(level);
        out += '}';
        return;
    }
    case Value::Type::Undefined:
    case Value::Type::Function: type_error("tojson: a " + type_name(v) + " is not JSON serializable");
    }
}

// Byte offsets of each code point of a UTF-8 string, plus the end.
std::vector<size_t> code_points(const std::string& s) {
    std::vector<size_t> at;
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
    at.push_back(s.size());
    return at;
}

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

} // namespace

std::string type_name(const Value& v) {
    switch (v.type()) {
    case Value::Type::Undefined: return "undefined value";
    case Value::Type::None: return "none";
    case Value::Type::Bool: return "boolean";
    case Value::Type::Int: return "integer";
    case Value::Type::Float: return "float";
    case Value::Type::String: return "string";
    case Value::Type::Array: return "list";
    case Value::Type::Object: return "dict";
    case Value::Type::Function: return "function";
    }
    return "value";
}

std::string to_str(const Value& v) {
    switch (v.type()) {
    case Value::Type::Undefined: return "";
    case Value::Type::String: return v.str();
    default: return repr(v);
    }
}

std::string repr(const Value& v) {
    switch (v.type()) {
    case Value::Type::Undefined: return "";
    case Value::Type::None: return "None";
    case Value::Type::Bool: return v.as_bool() ? "True" : "False";
    case Value::Type::Int: return std::to_string(v.as_int());
    case Value::Type::Float: return float_repr(v.as_float());
    case Value::Type::String: return quote_python(v.str());
    case Value::Type::Array: {
        std::string out = "[";
        for (size_t i = 0; i < v.array().size(); ++i) out += (i ? ", " : "") + repr(v.array()[i]);
        return out + "]";
    }
    case Value::Type::Object: {
        std::string out = "{";
        bool first = true;
        for (const auto& [k, item] : v.object()) {
            out += (first ? "" : ", ") + quote_python(k) + ": " + repr(item);
            first = false;
        }
        return out + "}";
    }
    case Value::Type::Function: return "<function>";
    }
    return "";
}

std::string to_json(const Value& v, int indent) {
    std::string out;
    json(out, v, indent, 0);
    return out;
}

bool equals(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.type() == Value::Type::Float || b.type() == Value::Type::Float) return a.as_float() == b.as_float();
        return a.as_int() == b.as_int();
    }
    if (a.type() != b.type()) return false;
    switch (a.type()) {
    case Value::Type::Undefined:
    case Value::Type::None: return true;
    case Value::Type::String: return a.str() == b.str();
    case Value::Type::Array: {
        if (a.array().size() != b.array().size()) return false;
        for (size_t i = 0; i < a.array().size(); ++i)
            if (!equals(a.array()[i], b.array()[i])) return false;
        return true;
    }
    case Value::Type::Object: {
        if (a.object().size() != b.object().size()) return false;
        for (const auto& [k, item] : a.object()) {
            const Value* other = b.find(k);
            if (!other || !equals(item, *other)) return false;
        }
        return true;
    }
    default: return false;
    }
}

bool less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) return a.as_float() < b.as_float();
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.is_array() && b.is_array()) {
        const Array &x = a.array(), &y = b.array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (less(x[i], y[i])) return true;
            if (less(y[i], x[i])) return false;
        }
        return x.size() < y.size();
    }
    type_error("cannot compare a " + type_name(a) + " with a " + type_name(b));
}

Value binary(std::string_view op, const Value& a, const Value& b) {
    if (op == "~") return Value(to_str(a) + to_str(b));
    if (op == "==") return Value(equals(a, b));
    if (op == "!=") return Value(!equals(a, b));
    if (op == "<") return Value(less(a, b));
    if (op == ">") return Value(less(b, a));
    if (op == "<=") return Value(!less(b, a));
    if (op == ">=") return Value(!less(a, b));
    if (op == "in") return Value(contains(b, a));
    if (op == "not in") return Value(!contains(b, a));
    if (op == "+") {
        if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
        if (a.is_array() && b.is_array()) {
            Array out = a.array();
            out.insert(out.end(), b.array().begin(), b.array().end());
            return Value(std::move(out));
        }
    }
    if (op == "*" && ((a.is_string() && b.type() == Value::Type::Int) || (b.is_string() && a.type() == Value::Type::Int))) {
        const std::string& s = a.is_string() ? a.str() : b.str();
        const int64_t n = a.is_string() ? b.as_int() : a.as_int();
        if (n > 0 && uint64_t(n) > (16u << 20) / std::max<size_t>(1, s.size())) type_error("string repetition too large");
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value(std::move(out));
    }
    if (!a.is_number() || !b.is_number())
        type_error("unsupported operand types for " + std::string(op) + ": " + type_name(a) + " and " + type_name(b));
    const bool floats = a.type() == Value::Type::Float || b.type() == Value::Type::Float;
    if (op == "/") {
        if (b.as_float() == 0) type_error("division by zero");
        return Value(a.as_float() / b.as_float());
    }
    if (op == "**") {
        if (!floats && b.as_int() >= 0) {
            const double p = std::pow(double(a.as_int()), double(b.as_int()));
            if (!(std::fabs(p) < 9.2e18)) type_error("integer overflow in **");
            return Value(int64_t(p));
        }
        return Value(std::pow(a.as_float(), b.as_float()));
    }
    if (floats) {
        const double x = a.as_float(), y = b.as_float();
        if (op == "+") return Value(x + y);
        if (op == "-") return Value(x - y);
        if (op == "*") return Value(x * y);
        if (y == 0) type_error("division by zero");
        if (op == "//") return Value(std::floor(x / y));
        if (op == "%") return Value(x - y * std::floor(x / y));
    } else {
        // Python integers do not overflow; ours refuse to.
        const int64_t x = a.as_int(), y = b.as_int();
        int64_t r = 0;
        if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
        if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
        if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
        if (op == "+" || op == "-" || op == "*") type_error("integer overflow in " + std::string(op));
        if (y == 0) type_error("division by zero");
        if (x == INT64_MIN && y == -1) type_error("integer overflow in " + std::string(op));
        if (op == "//") return Value(floor_div(x, y));
        if (op == "%") return Value(x - y * floor_div(x, y));
    }
    type_error("unknown operator " + std::string(op));
}

bool contains(const Value& container, const Value& item) {
    switch (container.type()) {
    case Value::Type::String:
        if (!item.is_string()) type_error("'in <string>' needs a string, not a " + type_name(item));
        return container.str().find(item.str()) != std::string::npos;
    case Value::Type::Array:
        for (const Value& v : container.array())
            if (equals(v, item)) return true;
        return false;
    case Value::Type::Object: return item.is_string() && container.find(item.str()) != nullptr;
    default: type_error("'in' needs a string, list or dict, not a " + type_name(container));
    }
}

size_t length(const Value& v) {
    switch (v.type()) {
    case Value::Type::Undefined: return 0;
    case Value::Type::String: return code_points(v.str()).size() - 1;
    case Value::Type::Array: return v.array().size();
    case Value::Type::Object: return v.object().size();
    default: type_error("a " + type_name(v) + " has no length");
    }
}

Value index(const Value& target, const Value& key) {
    if (target.is_object()) {
        if (!key.is_string()) return Value();
        const Value* v = target.find(key.str());
        return v ? *v : Value();
    }
    if ((target.is_array() || target.is_string()) && key.type() == Value::Type::Int) {
        int64_t i = key.as_int();
        if (target.is_array()) {
            const int64_t n = int64_t(target.array().size());
            if (i < 0) i += n;
            return i >= 0 && i < n ? target.array()[size_t(i)] : Value();
        }
        const auto at = code_points(target.str());
        const int64_t n = int64_t(at.size()) - 1;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return Value(target.str().substr(at[size_t(i)], at[size_t(i) + 1] - at[size_t(i)]));
    }
    if (target.is_undefined()) type_error("cannot index an undefined value");
    return Value();
}

Value slice(const Value& target, const Value& start, const Value& stop, const Value& step_v) {
    const int64_t step = step_v.is_undefined() || step_v.is_none() ? 1 : step_v.as_int();
    if (step == 0) type_error("slice step cannot be zero");
    std::vector<size_t> at;
    int64_t n;
    if (target.is_array()) n = int64_t(target.array().size());
    else if (target.is_string()) {
        at = code_points(target.str());
        n = int64_t(at.size()) - 1;
    } else type_error("cannot slice a " + type_name(target));
    auto bound = [&](const Value& v, int64_t fallback) {
        if (v.is_undefined() || v.is_none()) return fallback;
        int64_t i = v.as_int();
        if (i < 0) i += n;
        if (step > 0) return std::clamp<int64_t>(i, 0, n);
        return std::clamp<int64_t>(i, -1, n - 1);
    };
    const int64_t b = bound(start, step > 0 ? 0 : n - 1), e = bound(stop, step > 0 ? n : -1);
    Array items;
    std::string text;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) {
        if (target.is_array()) items.push_back(target.array()[size_t(i)]);
        else text.append(target.str(), at[size_t(i)], at[size_t(i) + 1] - at[size_t(i)]);
    }
    return target.is_array() ? Value(std::move(items)) : Value(std::move(text));
}

Array iterate(const Value& v) {
    switch (v.type()) {
    case Value::Type::Undefined: return {};
    case Value::Type::Array: return v.array();
    case Value::Type::Object: {
        Array keys;
        for (const auto& [k, item] : v.object()) keys.emplace_back(k);
        return keys;
    }
    case Value::Type::String: {
        Array chars;
        const auto at = code_points(v.str());
        for (size_t i = 0; i + 1 < at.size(); ++i) chars.emplace_back(v.str().substr(at[i], at[i + 1] - at[i]));
        return chars;
    }
    default: type_error("cannot iterate over a " + type_name(v));
    }
}

} // namespace arbor::jinja
