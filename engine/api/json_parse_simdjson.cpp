// The fast reader behind Json::parse: simdjson validates the whole document (grammar,
// numbers, UTF-8, control characters) into its DOM, and the walk here copies that into
// our Json with each container's storage reserved at its final size in the document's
// arena (json_arena.h), checking the depth limit and duplicate keys. Whatever it is
// unsure of it leaves to the reference reader (see json_parse_paths.h).
#include "api/json_parse_paths.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

namespace arbor::api {

class JsonTreeBuilder {
public:
    // Containers take their storage from `arena`.
    JsonTreeBuilder(int max_depth, JsonArena* arena) : max_depth_(max_depth), items_(arena), members_(arena) {}

    // Builds `e`, a value at nesting `depth` (the root's containers are at 1), into `out`;
    // false when the document must go to the reference reader.
    bool build(simdjson::dom::element e, Json& out, int depth) {
        using simdjson::dom::element_type;
        switch (e.type()) {
        case element_type::NULL_VALUE: return true;
        case element_type::BOOL: out.value_ = e.get_bool().value_unsafe(); return true;
        case element_type::INT64: {
            const int64_t v = e.get_int64().value_unsafe();
            out.value_ = Json::Number{double(v), v, true};
            return true;
        }
        case element_type::UINT64: {
            // simdjson reads every integer that fits int64 as INT64.
            out.value_ = Json::Number{double(e.get_uint64().value_unsafe()), 0, false};
            return true;
        }
        case element_type::DOUBLE: {
            const double v = e.get_double().value_unsafe();
            // "-0" is an integer to nlohmann and "-0.0" a double; the DOM no longer tells
            // which the text had.
            if (!std::isfinite(v) || (v == 0.0 && std::signbit(v))) return false;
            out.value_ = Json::Number{v, 0, false};
            return true;
        }
        case element_type::STRING: out.value_ = std::string(e.get_string().value_unsafe()); return true;
        case element_type::ARRAY: {
            if (depth > max_depth_) return false;
            const simdjson::dom::array items = e.get_array().value_unsafe();
            auto& array = out.value_.emplace<Json::Array>(items_);
            array.reserve(reserved(items.size()));
            for (simdjson::dom::element item : items)
                if (!build(item, array.emplace_back(), depth + 1)) return false;
            return true;
        }
        case element_type::OBJECT: {
            if (depth > max_depth_) return false;
            const simdjson::dom::object fields = e.get_object().value_unsafe();
            auto& members = out.value_.emplace<Json::Object>(members_);
            members.reserve(reserved(fields.size()));
            for (const simdjson::dom::key_value_pair field : fields) {
                auto& member = members.emplace_back(std::piecewise_construct, std::forward_as_tuple(field.key),
                                                    std::forward_as_tuple());
                if (!build(field.value, member.second, depth + 1)) return false;
            }
            return json_detail::first_repeated_key(members) == members.size();
        }
        }
        return false;
    }

private:
    // simdjson saturates a container's size at 0xFFFFFF; reserving that could be far more
    // than the document needs.
    static size_t reserved(size_t size) { return size < 0xFFFFFF ? size : 0; }

    int max_depth_;
    JsonAllocator<Json> items_;
    JsonAllocator<Json::Member> members_;
};

namespace json_detail {

// Deeper limits than this are left to the reference reader, which keeps no native stack
// per level (the walk above recurses once per level).
constexpr int kFastPathMaxDepth = 1000;

// A parser's buffers (about 14 bytes per byte of the largest document it has read) are
// kept for the next parse: allocating them afresh costs more than the parse itself (the
// kernel zeroes each new page, and freeing a big tree then allocating big buffers makes
// malloc consolidate every small chunk). One spare parser is kept, whatever the number of
// threads; a parse that finds it taken uses a new one and keeps it if none is spare.
class SpareParser {
public:
    std::unique_ptr<simdjson::dom::parser> take() {
        std::lock_guard lock(mutex_);
        if (spare_) return std::move(spare_);
        return std::make_unique<simdjson::dom::parser>();
    }
    void give_back(std::unique_ptr<simdjson::dom::parser> parser) {
        std::lock_guard lock(mutex_);
        if (!spare_) spare_ = std::move(parser);
    }

private:
    std::mutex mutex_;
    std::unique_ptr<simdjson::dom::parser> spare_;
};

SpareParser& spare_parser() {
    static SpareParser spare;
    return spare;
}

std::optional<Json> parse_with(simdjson::dom::parser& parser, std::string_view text, const JsonParseLimits& limits) {
    // One level more than ours, so that a document too deep for us reaches the walk,
    // which leaves it to the reference reader to place the error. The buffers only grow.
    const size_t depth = size_t(limits.max_depth) + 1;
    if ((parser.capacity() < text.size() || parser.max_depth() != depth) &&
        parser.allocate(std::max(text.size(), parser.capacity()), depth) != simdjson::SUCCESS)
        return std::nullopt;
    simdjson::dom::element root;
    if (parser.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS) return std::nullopt;
    const auto arena = JsonAllocator<Json>::with_new_arena();
    Json value;
    const bool built = JsonTreeBuilder(limits.max_depth, arena.arena()).build(root, value, 1);
    arena.arena()->seal();
    if (!built) return std::nullopt;
    return value;
}

std::optional<Json> parse_with_simdjson(std::string_view text, const JsonParseLimits& limits) {
    if (limits.max_depth < 0 || limits.max_depth > kFastPathMaxDepth) return std::nullopt;
    std::unique_ptr<simdjson::dom::parser> parser = spare_parser().take();
    std::optional<Json> value = parse_with(*parser, text, limits);
    spare_parser().give_back(std::move(parser));
    return value;
}

} // namespace json_detail
} // namespace arbor::api
