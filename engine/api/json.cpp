#include "api/json.h"

#include "api/utf8.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>

namespace arbor::api {

class JsonParser {
public:
    JsonParser(std::string_view text, const JsonParseLimits& limits) : s_(text), limits_(limits) {}

    Json document() {
        if (s_.size() > limits_.max_bytes)
            throw JsonError("the document is larger than " + std::to_string(limits_.max_bytes) + " bytes", 0);
        skip_space();
        Json v = value(0);
        skip_space();
        if (pos_ != s_.size()) fail("unexpected text after the value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const { throw JsonError(what, pos_); }

    bool at_end() const { return pos_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[pos_]; }

    void skip_space() {
        while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    }

    void expect_word(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) fail("invalid literal");
        pos_ += word.size();
    }

    Json value(int depth) {
        if (at_end()) fail("unexpected end of input");
        switch (peek()) {
        case '{': return object(depth + 1);
        case '[': return array(depth + 1);
        case '"': return Json(string());
        case 't': expect_word("true"); return Json(true);
        case 'f': expect_word("false"); return Json(false);
        case 'n': expect_word("null"); return Json(nullptr);
        default:
            if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return number();
            fail("unexpected character");
        }
    }

    void enter(int depth) {
        if (depth > limits_.max_depth) fail("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    }

    // Objects up to this many members compare each new key with the ones before it; a
    // larger one is checked once at its end by sorting its keys, so the cost stays
    // O(n log n) whatever the keys are (a hash set could be flooded with colliding keys).
    static constexpr size_t kKeyScanLimit = 16;

    // Fails at the first key, in document order, that repeats an earlier key of the
    // object. The first kKeyScanLimit keys are already known to differ, so a repeat is a
    // later member; late_key_offsets[i] is where member kKeyScanLimit + i's key starts.
    void check_unique_keys(const Json::Object& members, const std::vector<size_t>& late_key_offsets) {
        // Sorted by (first 8 bytes, key, member index): equal keys end up side by side,
        // the first one first, so each later one is a repeat. The 8-byte prefix settles
        // most comparisons without a call to memcmp.
        struct Entry {
            uint64_t prefix;
            std::string_view key;
            size_t index;
            bool operator<(const Entry& o) const {
                if (prefix != o.prefix) return prefix < o.prefix;
                if (const int c = key.compare(o.key)) return c < 0;
                return index < o.index;
            }
        };
        std::vector<Entry> order;
        order.reserve(members.size());
        for (size_t i = 0; i < members.size(); ++i) {
            const std::string& key = members[i].first;
            uint64_t prefix = 0;
            std::memcpy(&prefix, key.data(), std::min(key.size(), sizeof prefix));
            order.push_back({prefix, key, i});
        }
        std::sort(order.begin(), order.end());
        size_t first_repeat = members.size();
        for (size_t i = 1; i < order.size(); ++i)
            if (order[i].prefix == order[i - 1].prefix && order[i].key == order[i - 1].key)
                first_repeat = std::min(first_repeat, order[i].index);
        if (first_repeat == members.size()) return;
        pos_ = late_key_offsets[first_repeat - kKeyScanLimit];
        fail("duplicate key \"" + members[first_repeat].first + "\"");
    }

    Json object(int depth) {
        enter(depth);
        ++pos_;  // '{'
        Json::Object members;
        std::vector<size_t> late_key_offsets;  // see check_unique_keys
        skip_space();
        if (peek() == '}') {
            ++pos_;
            return Json(std::move(members));
        }
        for (;;) {
            skip_space();
            if (peek() != '"') fail("expected a string key");
            const size_t key_pos = pos_;
            std::string key = string();
            if (members.size() < kKeyScanLimit) {
                for (const auto& m : members)
                    if (m.first == key) {
                        pos_ = key_pos;
                        fail("duplicate key \"" + key + "\"");
                    }
            } else {
                late_key_offsets.push_back(key_pos);
            }
            skip_space();
            if (peek() != ':') fail("expected ':'");
            ++pos_;
            skip_space();
            Json v = value(depth);
            members.emplace_back(std::move(key), std::move(v));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == '}') {
                const size_t end = pos_ + 1;
                if (members.size() > kKeyScanLimit) check_unique_keys(members, late_key_offsets);
                pos_ = end;
                return Json(std::move(members));
            }
            fail("expected ',' or '}'");
        }
    }

    Json array(int depth) {
        enter(depth);
        ++pos_;  // '['
        Json::Array items;
        skip_space();
        if (peek() == ']') {
            ++pos_;
            return Json(std::move(items));
        }
        for (;;) {
            skip_space();
            items.push_back(value(depth));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() == ']') {
                ++pos_;
                return Json(std::move(items));
            }
            fail("expected ',' or ']'");
        }
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    Json number() {
        const size_t start = pos_;
        bool integral = true;
        if (peek() == '-') ++pos_;
        if (peek() == '0') {
            ++pos_;
            if (is_digit(peek())) fail("leading zeros are not allowed");
        } else if (is_digit(peek())) {
            while (is_digit(peek())) ++pos_;
        } else {
            fail("expected a digit");
        }
        if (peek() == '.') {
            integral = false;
            ++pos_;
            if (!is_digit(peek())) fail("expected a digit after '.'");
            while (is_digit(peek())) ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!is_digit(peek())) fail("expected a digit in the exponent");
            while (is_digit(peek())) ++pos_;
        }
        const char* first = s_.data() + start;
        const char* last = s_.data() + pos_;
        Json out;
        Json::Number n;
        if (integral) {
            int64_t i = 0;
            auto r = std::from_chars(first, last, i);
            if (r.ec == std::errc() && r.ptr == last) {
                n.integer = i;
                n.is_integer = true;
            }
        }
        auto r = std::from_chars(first, last, n.value);
        if (r.ec == std::errc::result_out_of_range) {
            // Underflow to zero is harmless; overflow to infinity is not a number JSON can carry.
            const bool tiny = std::abs(std::strtod(std::string(first, last).c_str(), nullptr)) < 1.0;
            if (!tiny) {
                pos_ = start;
                fail("number out of range");
            }
            n.value = 0.0;
        } else if (r.ec != std::errc() || r.ptr != last) {
            pos_ = start;
            fail("invalid number");
        }
        out.value_ = n;
        return out;
    }

    uint32_t hex4() {
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = s_[pos_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
            else fail("invalid hex digit in \\u escape");
        }
        return v;
    }

    // A string byte that stands for itself: no quote, backslash, control or UTF-8 byte.
    static bool is_plain_ascii(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

    std::string string() {
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (c < 0x20) fail("unescaped control character in a string");
            if (c == '\\') {
                ++pos_;
                escape(out);
                continue;
            }
            if (c < 0x80) {  // a run of plain ASCII, appended at once
                size_t end = pos_ + 1;
                while (end < s_.size() && is_plain_ascii(static_cast<unsigned char>(s_[end]))) ++end;
                out.append(s_.substr(pos_, end - pos_));
                pos_ = end;
                continue;
            }
            const size_t len = utf8_sequence_length(s_.substr(pos_));
            if (len == 0) fail("invalid UTF-8 in a string");
            out.append(s_.substr(pos_, len));
            pos_ += len;
        }
    }

    void escape(std::string& out) {
        if (at_end()) fail("unterminated escape");
        const char c = s_[pos_++];
        switch (c) {
        case '"': out.push_back('"'); return;
        case '\\': out.push_back('\\'); return;
        case '/': out.push_back('/'); return;
        case 'b': out.push_back('\b'); return;
        case 'f': out.push_back('\f'); return;
        case 'n': out.push_back('\n'); return;
        case 'r': out.push_back('\r'); return;
        case 't': out.push_back('\t'); return;
        case 'u': break;
        default: --pos_; fail("invalid escape");
        }
        uint32_t cp = hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            const uint32_t low = hex4();
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
                pos_ = save;  // the next escape stands alone
            }
        }
        // A lone surrogate has no UTF-8 form; it becomes U+FFFD as JavaScript's
        // TextEncoder would make it.
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        append_utf8(out, cp);
    }

    std::string_view s_;
    const JsonParseLimits& limits_;
    size_t pos_ = 0;
};

Json::Json(double v) : value_(Number{v, 0, false}) {
    if (std::isfinite(v) && v == std::trunc(v) && std::abs(v) < 9.007199254740992e15) {
        auto& n = std::get<Number>(value_);
        n.integer = int64_t(v);
        n.is_integer = true;
    }
}

Json::Json(uint64_t v) {
    if (v <= uint64_t(std::numeric_limits<int64_t>::max())) value_ = Number{double(v), int64_t(v), true};
    else value_ = Number{double(v), 0, false};
}

Json Json::parse(std::string_view text, const JsonParseLimits& limits) { return JsonParser(text, limits).document(); }

namespace {
[[noreturn]] void wrong_type(const char* wanted) { throw Error(std::string("JSON value is not ") + wanted); }
} // namespace

bool Json::as_bool() const {
    if (!is_bool()) wrong_type("a boolean");
    return std::get<bool>(value_);
}

double Json::as_double() const {
    if (!is_number()) wrong_type("a number");
    return std::get<Number>(value_).value;
}

std::optional<int64_t> Json::as_integer() const {
    if (!is_number()) return std::nullopt;
    const auto& n = std::get<Number>(value_);
    if (n.is_integer) return n.integer;
    if (std::isfinite(n.value) && n.value == std::trunc(n.value) && std::abs(n.value) < 9.2e18) return int64_t(n.value);
    return std::nullopt;
}

const std::string& Json::as_string() const {
    if (!is_string()) wrong_type("a string");
    return std::get<std::string>(value_);
}

const Json::Array& Json::as_array() const {
    if (!is_array()) wrong_type("an array");
    return std::get<Array>(value_);
}

Json::Array& Json::as_array() {
    if (!is_array()) wrong_type("an array");
    return std::get<Array>(value_);
}

const Json::Object& Json::as_object() const {
    if (!is_object()) wrong_type("an object");
    return std::get<Object>(value_);
}

const Json* Json::find(std::string_view key) const {
    if (!is_object()) return nullptr;
    for (const auto& [k, v] : std::get<Object>(value_))
        if (k == key) return &v;
    return nullptr;
}

Json& Json::set(std::string_view key, Json value) {
    if (is_null()) value_ = Object{};
    if (!is_object()) wrong_type("an object");
    auto& members = std::get<Object>(value_);
    for (auto& [k, v] : members)
        if (k == key) {
            v = std::move(value);
            return v;
        }
    members.emplace_back(std::string(key), std::move(value));
    return members.back().second;
}

void Json::push_back(Json value) {
    if (is_null()) value_ = Array{};
    if (!is_array()) wrong_type("an array");
    std::get<Array>(value_).push_back(std::move(value));
}

} // namespace arbor::api
