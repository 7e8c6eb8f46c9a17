// A small GGUF writer for the tests and the synthetic model generator: builds valid files
// and, through its overrides and raw entries, files that are broken in one precise way.
// Large files stream: tensors declare streamed_bytes, the caller writes header_bytes()
// and then each tensor's data, padded to the alignment, in order.
#pragma once

#include "arbor/gguf.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbor::test {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian

// Little-endian byte buffer builder.
struct Bytes {
    std::vector<uint8_t> buf;

    Bytes& u8(uint8_t v);
    Bytes& u16(uint16_t v);
    Bytes& u32(uint32_t v);
    Bytes& u64(uint64_t v);
    Bytes& f32(float v);
    Bytes& f64(double v);
    Bytes& str(std::string_view s);  // uint64 length + bytes
    Bytes& raw(const std::vector<uint8_t>& bytes);
};

// Value constructors for the tests' expected metadata.
namespace gv {
GgufValue u8(uint8_t v);
GgufValue i8(int8_t v);
GgufValue u16(uint16_t v);
GgufValue i16(int16_t v);
GgufValue u32(uint32_t v);
GgufValue i32(int32_t v);
GgufValue u64(uint64_t v);
GgufValue i64(int64_t v);
GgufValue f32(float v);
GgufValue f64(double v);
GgufValue boolean(bool v);
GgufValue str(std::string v);
GgufValue arr(GgufType element_type, std::vector<GgufValue> items);
} // namespace gv

// Serialized payload of a value (without its type id), as GGUF stores it.
void encode_value(Bytes& out, const GgufValue& value);
// Deep equality of type, element type and data.
bool same_value(const GgufValue& a, const GgufValue& b);

struct TestTensor {
    std::string name;
    uint32_t type = 0;                 // raw GGUF type id
    std::vector<uint64_t> dims;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;    // default: the next aligned offset
    bool write_data = true;            // false leaves the data out of the file
    uint64_t streamed_bytes = 0;       // size of data the caller streams (data stays empty)

    uint64_t n_bytes() const { return data.empty() ? streamed_bytes : data.size(); }
};

class GgufWriter {
public:
    uint32_t magic = kGgufMagic;
    uint32_t version = 3;
    size_t alignment = 32;                // used for layout; add general.alignment to change it
    std::optional<uint64_t> tensor_count;  // overrides of the header counts
    std::optional<uint64_t> kv_count;

    void add(std::string key, GgufValue value);
    // An entry whose type id and payload are written verbatim.
    void add_raw(std::string key, uint32_t type_id, std::vector<uint8_t> payload);
    // An entry written verbatim, key included.
    void add_raw_entry(std::vector<uint8_t> entry);
    void add_tensor(TestTensor tensor);

    std::vector<uint8_t> bytes() const;
    // What bytes() holds before the tensor data: header, metadata, tensor table, padding.
    std::vector<uint8_t> header_bytes() const;
    // Offset of the tensor data section in bytes(); valid when there are tensors.
    size_t data_start() const;
    // Offsets the tensors get in the data section.
    std::vector<uint64_t> tensor_offsets() const;

    const std::vector<TestTensor>& tensors() const { return tensors_; }

private:
    std::vector<std::vector<uint8_t>> entries_;
    std::vector<TestTensor> tensors_;

    Bytes header_and_tables() const;
};

// Deterministic filler bytes for tensor data.
std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed);
void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);

} // namespace arbor::test
