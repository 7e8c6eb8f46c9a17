#include "gguf_test_writer.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace arbor::test {

namespace {

template <typename T>
void put(std::vector<uint8_t>& buf, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    buf.insert(buf.end(), b, b + sizeof(T));
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

GgufValue make(GgufType type, decltype(GgufValue::data) data) {
    GgufValue v;
    v.type = type;
    v.data = std::move(data);
    return v;
}

} // namespace

Bytes& Bytes::u8(uint8_t v) { put(buf, v); return *this; }
Bytes& Bytes::u16(uint16_t v) { put(buf, v); return *this; }
Bytes& Bytes::u32(uint32_t v) { put(buf, v); return *this; }
Bytes& Bytes::u64(uint64_t v) { put(buf, v); return *this; }
Bytes& Bytes::f32(float v) { put(buf, v); return *this; }
Bytes& Bytes::f64(double v) { put(buf, v); return *this; }
Bytes& Bytes::str(std::string_view s) {
    u64(s.size());
    buf.insert(buf.end(), s.begin(), s.end());
    return *this;
}
Bytes& Bytes::raw(const std::vector<uint8_t>& bytes) {
    buf.insert(buf.end(), bytes.begin(), bytes.end());
    return *this;
}

namespace gv {
GgufValue u8(uint8_t v) { return make(GgufType::Uint8, uint64_t(v)); }
GgufValue i8(int8_t v) { return make(GgufType::Int8, int64_t(v)); }
GgufValue u16(uint16_t v) { return make(GgufType::Uint16, uint64_t(v)); }
GgufValue i16(int16_t v) { return make(GgufType::Int16, int64_t(v)); }
GgufValue u32(uint32_t v) { return make(GgufType::Uint32, uint64_t(v)); }
GgufValue i32(int32_t v) { return make(GgufType::Int32, int64_t(v)); }
GgufValue u64(uint64_t v) { return make(GgufType::Uint64, v); }
GgufValue i64(int64_t v) { return make(GgufType::Int64, v); }
GgufValue f32(float v) { return make(GgufType::Float32, double(v)); }
GgufValue f64(double v) { return make(GgufType::Float64, v); }
GgufValue boolean(bool v) { return make(GgufType::Bool, v); }
GgufValue str(std::string v) { return make(GgufType::String, std::move(v)); }
GgufValue arr(GgufType element_type, std::vector<GgufValue> items) {
    GgufValue v = make(GgufType::Array, std::move(items));
    v.element_type = element_type;
    return v;
}
} // namespace gv

void encode_value(Bytes& out, const GgufValue& v) {
    const auto u = [&] { return std::get<uint64_t>(v.data); };
    const auto i = [&] { return std::get<int64_t>(v.data); };
    switch (v.type) {
    case GgufType::Uint8: out.u8(uint8_t(u())); break;
    case GgufType::Int8: out.u8(uint8_t(int8_t(i()))); break;
    case GgufType::Uint16: out.u16(uint16_t(u())); break;
    case GgufType::Int16: out.u16(uint16_t(int16_t(i()))); break;
    case GgufType::Uint32: out.u32(uint32_t(u())); break;
    case GgufType::Int32: out.u32(uint32_t(int32_t(i()))); break;
    case GgufType::Uint64: out.u64(u()); break;
    case GgufType::Int64: out.u64(uint64_t(i())); break;
    case GgufType::Float32: out.f32(float(std::get<double>(v.data))); break;
    case GgufType::Float64: out.f64(std::get<double>(v.data)); break;
    case GgufType::Bool: out.u8(std::get<bool>(v.data) ? 1 : 0); break;
    case GgufType::String: out.str(std::get<std::string>(v.data)); break;
    case GgufType::Array: {
        const auto& items = std::get<std::vector<GgufValue>>(v.data);
        out.u32(uint32_t(v.element_type)).u64(items.size());
        for (const auto& item : items) {
            if (item.type != v.element_type)
                throw std::logic_error("test writer: array element of the wrong type");
            encode_value(out, item);
        }
        break;
    }
    }
}

bool same_value(const GgufValue& a, const GgufValue& b) {
    if (a.type != b.type || a.data.index() != b.data.index()) return false;
    if (a.type != GgufType::Array) {
        if (const auto* d = std::get_if<double>(&a.data)) {
            const double e = std::get<double>(b.data);
            return std::memcmp(d, &e, sizeof e) == 0;  // bit-exact, NaN included
        }
        if (const auto* u = std::get_if<uint64_t>(&a.data)) return *u == std::get<uint64_t>(b.data);
        if (const auto* i = std::get_if<int64_t>(&a.data)) return *i == std::get<int64_t>(b.data);
        if (const auto* t = std::get_if<bool>(&a.data)) return *t == std::get<bool>(b.data);
        return std::get<std::string>(a.data) == std::get<std::string>(b.data);
    }
    if (a.element_type != b.element_type) return false;
    const auto& x = std::get<std::vector<GgufValue>>(a.data);
    const auto& y = std::get<std::vector<GgufValue>>(b.data);
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k)
        if (!same_value(x[k], y[k])) return false;
    return true;
}

void GgufWriter::add(std::string key, GgufValue value) {
    Bytes e;
    e.str(key).u32(uint32_t(value.type));
    encode_value(e, value);
    entries_.push_back(std::move(e.buf));
}

void GgufWriter::add_raw(std::string key, uint32_t type_id, std::vector<uint8_t> payload) {
    Bytes e;
    e.str(key).u32(type_id).raw(payload);
    entries_.push_back(std::move(e.buf));
}

void GgufWriter::add_raw_entry(std::vector<uint8_t> entry) { entries_.push_back(std::move(entry)); }

void GgufWriter::add_tensor(TestTensor tensor) { tensors_.push_back(std::move(tensor)); }

std::vector<uint64_t> GgufWriter::tensor_offsets() const {
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const auto& t : tensors_) {
        const uint64_t off = t.offset.value_or(next);
        offsets.push_back(off);
        if (!t.offset) next = align_up(off + t.n_bytes(), alignment);
    }
    return offsets;
}

Bytes GgufWriter::header_and_tables() const {
    Bytes out;
    out.u32(magic).u32(version);
    out.u64(tensor_count.value_or(tensors_.size()));
    out.u64(kv_count.value_or(entries_.size()));
    for (const auto& e : entries_) out.raw(e);
    const auto offsets = tensor_offsets();
    for (size_t k = 0; k < tensors_.size(); ++k) {
        const auto& t = tensors_[k];
        out.str(t.name).u32(uint32_t(t.dims.size()));
        for (uint64_t d : t.dims) out.u64(d);
        out.u32(t.type).u64(offsets[k]);
    }
    return out;
}

size_t GgufWriter::data_start() const {
    return size_t(align_up(header_and_tables().buf.size(), alignment));
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
    Bytes out = header_and_tables();
    out.buf.resize(size_t(align_up(out.buf.size(), alignment)), 0);
    return out.buf;
}

std::vector<uint8_t> GgufWriter::bytes() const {
    Bytes out = header_and_tables();
    if (tensors_.empty()) return out.buf;  // like vocab-only files: no trailing padding
    const size_t start = size_t(align_up(out.buf.size(), alignment));
    const auto offsets = tensor_offsets();
    size_t end = start;  // no padding after the last tensor
    for (size_t k = 0; k < tensors_.size(); ++k)
        if (tensors_[k].write_data)
            end = std::max(end, size_t(start + offsets[k] + tensors_[k].data.size()));
    out.buf.resize(end, 0);
    for (size_t k = 0; k < tensors_.size(); ++k)
        // An empty tensor's data() may be null, which memcpy may not be given even for 0 bytes.
        if (tensors_[k].write_data && !tensors_[k].data.empty())
            std::memcpy(out.buf.data() + start + offsets[k], tensors_[k].data.data(),
                        tensors_[k].data.size());
    return out.buf;
}

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    uint32_t x = 0x9e3779b9u ^ seed;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = uint8_t(x >> 24);
    }
    return v;
}

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
    // A fresh inode: truncating a just-written file in place makes ext4 flush it to disk.
    std::filesystem::remove(path);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!f) throw std::runtime_error("test writer: cannot write " + path.string());
}

} // namespace arbor::test
