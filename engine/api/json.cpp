// Json values: construction and typed access (parsing is in json_parse.cpp).
#include "api/json.h"

#include <cmath>
#include <limits>

namespace arbor::api {

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
