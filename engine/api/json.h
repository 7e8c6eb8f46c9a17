// A small JSON value with a strict RFC 8259 parser and a serializer, for the API.
// Parsing refuses anything a lenient parser might guess at (comments, trailing commas,
// leading zeros, unescaped control characters, invalid UTF-8, duplicate keys), and is
// bounded: a document larger than ParseLimits::max_bytes or nested deeper than
// ParseLimits::max_depth is refused before any deeper work is done. Objects keep their
// keys in insertion order, so serialized output is deterministic. A parsed document's
// arrays and objects share one arena (json_arena.h); values built in code use the heap.
#pragma once

#include "api/json_arena.h"
#include "arbor/error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace arbor::api {

class JsonError : public Error {
public:
    JsonError(const std::string& message, size_t offset)
        : Error(message + " at byte " + std::to_string(offset)), offset_(offset) {}
    size_t offset() const { return offset_; }

private:
    size_t offset_;
};

struct JsonParseLimits {
    size_t max_bytes = 8u << 20;
    int max_depth = 64;
};

class Json {
public:
    enum class Type { Null, Bool, Number, String, Array, Object };
    using Member = std::pair<std::string, Json>;
    using Array = std::vector<Json, JsonAllocator<Json>>;
    using Object = std::vector<Member, JsonAllocator<Member>>;

    Json() = default;
    Json(std::nullptr_t) {}
    Json(bool b) : value_(b) {}
    Json(int v) : value_(Number{double(v), v, true}) {}
    Json(int64_t v) : value_(Number{double(v), v, true}) {}
    Json(uint32_t v) : value_(Number{double(v), int64_t(v), true}) {}
    Json(uint64_t v);
    Json(double v);
    Json(std::string s) : value_(std::move(s)) {}
    Json(std::string_view s) : value_(std::string(s)) {}
    Json(const char* s) : value_(std::string(s)) {}
    Json(Array a) : value_(std::move(a)) {}
    Json(Object o) : value_(std::move(o)) {}

    static Json array() { return Json(Array{}); }
    static Json object() { return Json(Object{}); }

    // Throws JsonError naming the problem and where it is.
    static Json parse(std::string_view text, const JsonParseLimits& limits = {});
    // Compact text; invalid UTF-8 in strings becomes U+FFFD, NaN and infinities null.
    std::string dump() const;

    Type type() const { return Type(value_.index()); }
    bool is_null() const { return type() == Type::Null; }
    bool is_bool() const { return type() == Type::Bool; }
    bool is_number() const { return type() == Type::Number; }
    bool is_string() const { return type() == Type::String; }
    bool is_array() const { return type() == Type::Array; }
    bool is_object() const { return type() == Type::Object; }

    // Accessors for the matching type; calling one on another type throws arbor::Error.
    bool as_bool() const;
    double as_double() const;
    // The value when it is an integer (written without fraction or exponent, or a whole
    // double) that fits in int64; nullopt otherwise (also for non-numbers).
    std::optional<int64_t> as_integer() const;
    const std::string& as_string() const;
    const Array& as_array() const;
    Array& as_array();
    const Object& as_object() const;

    // Object member lookup; nullptr when absent or when this is not an object.
    const Json* find(std::string_view key) const;
    // Sets (replacing) an object member; a null value becomes an empty object first.
    Json& set(std::string_view key, Json value);
    // Appends to an array; a null value becomes an empty array first.
    void push_back(Json value);

    bool operator==(const Json& other) const = default;

private:
    struct Number {
        double value = 0.0;
        int64_t integer = 0;
        bool is_integer = false;  // `integer` holds the exact value
        bool operator==(const Number& o) const {
            return is_integer && o.is_integer ? integer == o.integer : value == o.value;
        }
    };
    void dump_to(std::string& out) const;
    friend class JsonParser;
    friend class JsonTreeBuilder;

    std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> value_;
};

// Appends `s` as a JSON string literal (with quotes) to out.
void append_json_string(std::string& out, std::string_view s);

} // namespace arbor::api
