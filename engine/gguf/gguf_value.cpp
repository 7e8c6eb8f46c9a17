#include "gguf_value_reader.h"

#include <limits>
#include <string>

namespace arbor {

std::string_view gguf_type_name(GgufType type) {
    switch (type) {
    case GgufType::Uint8: return "uint8";
    case GgufType::Int8: return "int8";
    case GgufType::Uint16: return "uint16";
    case GgufType::Int16: return "int16";
    case GgufType::Uint32: return "uint32";
    case GgufType::Int32: return "int32";
    case GgufType::Float32: return "float32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::Uint64: return "uint64";
    case GgufType::Int64: return "int64";
    case GgufType::Float64: return "float64";
    }
    return "unknown";
}

std::optional<uint64_t> GgufValue::as_uint() const {
    if (const auto* u = std::get_if<uint64_t>(&data)) return *u;
    if (const auto* i = std::get_if<int64_t>(&data); i && *i >= 0) return uint64_t(*i);
    return std::nullopt;
}

std::optional<int64_t> GgufValue::as_int() const {
    if (const auto* i = std::get_if<int64_t>(&data)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&data);
        u && *u <= uint64_t(std::numeric_limits<int64_t>::max()))
        return int64_t(*u);
    return std::nullopt;
}

std::optional<double> GgufValue::as_float() const {
    if (const auto* d = std::get_if<double>(&data)) return *d;
    if (const auto* u = std::get_if<uint64_t>(&data)) return double(*u);
    if (const auto* i = std::get_if<int64_t>(&data)) return double(*i);
    return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
    if (const auto* b = std::get_if<bool>(&data)) return *b;
    return std::nullopt;
}

const std::string* GgufValue::as_string() const { return std::get_if<std::string>(&data); }

const std::vector<GgufValue>* GgufValue::as_array() const {
    return std::get_if<std::vector<GgufValue>>(&data);
}

namespace gguf_detail {
namespace {

// Fewest bytes one serialized value of the type occupies; bounds hostile array lengths.
size_t min_encoded_size(GgufType type) {
    switch (type) {
    case GgufType::Uint8:
    case GgufType::Int8:
    case GgufType::Bool: return 1;
    case GgufType::Uint16:
    case GgufType::Int16: return 2;
    case GgufType::Uint32:
    case GgufType::Int32:
    case GgufType::Float32: return 4;
    case GgufType::Uint64:
    case GgufType::Int64:
    case GgufType::Float64:
    case GgufType::String: return 8;  // a string is at least its length prefix
    case GgufType::Array: return 12;  // element type + length
    }
    return 1;
}

GgufValue read_array(ByteReader& in, int depth) {
    GgufValue v;
    v.type = GgufType::Array;
    v.element_type = checked_type(in.u32());
    if (v.element_type == GgufType::Array && depth + 1 >= kMaxArrayDepth)
        throw Error("arrays nested too deeply (more than " + std::to_string(kMaxArrayDepth) +
                    " levels)");
    const uint64_t count = in.u64();
    in.require_items(count, min_encoded_size(v.element_type), "array length");
    std::vector<GgufValue> items;
    items.reserve(size_t(count));
    for (uint64_t i = 0; i < count; ++i) items.push_back(read_value(in, v.element_type, depth + 1));
    v.data = std::move(items);
    return v;
}

} // namespace

GgufType checked_type(uint32_t raw) {
    if (raw > uint32_t(GgufType::Float64))
        throw Error("invalid value type id " + std::to_string(raw));
    return GgufType(raw);
}

GgufValue read_value(ByteReader& in, GgufType type, int depth) {
    GgufValue v;
    v.type = type;
    switch (type) {
    case GgufType::Uint8: v.data = uint64_t(in.u8()); break;
    case GgufType::Uint16: v.data = uint64_t(in.u16()); break;
    case GgufType::Uint32: v.data = uint64_t(in.u32()); break;
    case GgufType::Uint64: v.data = in.u64(); break;
    case GgufType::Int8: v.data = int64_t(in.i8()); break;
    case GgufType::Int16: v.data = int64_t(in.i16()); break;
    case GgufType::Int32: v.data = int64_t(in.i32()); break;
    case GgufType::Int64: v.data = in.i64(); break;
    case GgufType::Float32: v.data = double(in.f32()); break;
    case GgufType::Float64: v.data = in.f64(); break;
    case GgufType::Bool: {
        const size_t at = in.pos();
        const uint8_t b = in.u8();
        if (b > 1)
            throw Error("invalid bool value " + std::to_string(b) + " at offset " +
                        std::to_string(at));
        v.data = b == 1;
        break;
    }
    case GgufType::String: v.data = in.string(); break;
    case GgufType::Array: return read_array(in, depth);
    }
    return v;
}

} // namespace gguf_detail
} // namespace arbor
