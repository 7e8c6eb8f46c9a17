// Json::parse: the checks made before either reader sees the text, and the choice of
// reader (see json_parse_paths.h).
#include "api/json_parse_paths.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace arbor::api {
namespace json_detail {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The \uXXXX escape at text[i] (i at the backslash), or -1 when it is not one.
long escaped_unit(std::string_view text, size_t i) {
    if (i + 6 > text.size() || text[i + 1] != 'u') return -1;
    long unit = 0;
    for (size_t k = i + 2; k < i + 6; ++k) {
        if (!is_hex(text[k])) return -1;
        const char c = text[k];
        unit = unit * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return unit;
}

// Objects up to this many members compare each key with the ones before it; larger ones
// sort their keys, so the cost stays O(n log n) whatever the keys are (a hash set could be
// flooded with colliding keys).
constexpr size_t kKeyScanLimit = 16;

} // namespace

std::optional<std::string> replace_lone_surrogates(std::string_view text) {
    std::optional<std::string> out;
    size_t i = 0;
    while ((i = text.find('\\', i)) != std::string_view::npos) {
        const long unit = escaped_unit(text, i);
        if (unit < 0xD800 || unit > 0xDFFF) {
            i += 2;  // any other escape, including "\\" before a 'u'
            continue;
        }
        const long next = unit <= 0xDBFF ? escaped_unit(text, i + 6) : -1;
        if (next >= 0xDC00 && next <= 0xDFFF) {
            i += 12;  // a proper pair
            continue;
        }
        if (!out) out.emplace(text);
        out->replace(i, 6, "\\uFFFD");
        i += 6;
    }
    return out;
}

size_t first_repeated_key(const Json::Object& members) {
    if (members.size() <= kKeyScanLimit) {
        for (size_t i = 1; i < members.size(); ++i)
            for (size_t j = 0; j < i; ++j)
                if (members[j].first == members[i].first) return i;
        return members.size();
    }
    // Sorted by (first 8 bytes, key, member index): equal keys end up side by side, the
    // first one first, so each later one is a repeat. The 8-byte prefix settles most
    // comparisons without a call to memcmp.
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
    return first_repeat;
}

} // namespace json_detail

Json Json::parse(std::string_view text, const JsonParseLimits& limits) {
    if (text.size() > limits.max_bytes)
        throw JsonError("the document is larger than " + std::to_string(limits.max_bytes) + " bytes", 0);
    // RFC 8259 forbids sending a byte order mark; both readers would skip one.
    if (text.substr(0, 3) == "\xEF\xBB\xBF") throw JsonError("a byte order mark is not allowed", 0);
    const std::optional<std::string> rewritten = json_detail::replace_lone_surrogates(text);
    const std::string_view input = rewritten ? std::string_view(*rewritten) : text;
    if (std::optional<Json> fast = json_detail::parse_with_simdjson(input, limits)) return std::move(*fast);
    return json_detail::parse_with_nlohmann(input, limits);
}

} // namespace arbor::api
