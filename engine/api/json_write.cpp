// Serialization of Json values.
#include "api/json.h"

#include "api/utf8.h"

#include <charconv>
#include <cmath>

namespace arbor::api {

std::string Json::dump() const {
    std::string out;
    dump_to(out);
    return out;
}

void Json::dump_to(std::string& out) const {
    switch (type()) {
    case Type::Null: out += "null"; return;
    case Type::Bool: out += std::get<bool>(value_) ? "true" : "false"; return;
    case Type::Number: {
        const auto& n = std::get<Number>(value_);
        char buf[32];
        std::to_chars_result r;
        if (n.is_integer) r = std::to_chars(buf, buf + sizeof buf, n.integer);
        else if (!std::isfinite(n.value)) {
            out += "null";
            return;
        } else if (n.value == 0.0 && std::signbit(n.value)) {
            out += "-0.0";  // "-0" would read back as the integer 0
            return;
        } else r = std::to_chars(buf, buf + sizeof buf, n.value);
        out.append(buf, r.ptr);
        return;
    }
    case Type::String: append_json_string(out, std::get<std::string>(value_)); return;
    case Type::Array: {
        out.push_back('[');
        bool first = true;
        for (const auto& v : std::get<Array>(value_)) {
            if (!first) out.push_back(',');
            first = false;
            v.dump_to(out);
        }
        out.push_back(']');
        return;
    }
    case Type::Object: {
        out.push_back('{');
        bool first = true;
        for (const auto& [k, v] : std::get<Object>(value_)) {
            if (!first) out.push_back(',');
            first = false;
            append_json_string(out, k);
            out.push_back(':');
            v.dump_to(out);
        }
        out.push_back('}');
        return;
    }
    }
}

void append_json_string(std::string& out, std::string_view s) {
    static const char* const kHex = "0123456789abcdef";
    out.push_back('"');
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            const size_t len = utf8_sequence_length(s.substr(i));
            if (len == 0) {
                out += "\xEF\xBF\xBD";
                ++i;
            } else {
                out.append(s.substr(i, len));
                i += len;
            }
            continue;
        }
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
                out += "\\u00";
                out.push_back(kHex[c >> 4]);
                out.push_back(kHex[c & 15]);
            } else {
                out.push_back(char(c));
            }
        }
        ++i;
    }
    out.push_back('"');
}

} // namespace arbor::api
