// Reader for GGUF model files (versions 2 and 3): metadata, tensor table and
// memory-mapped tensor data. Every malformed or hostile input throws arbor::Error
// with a message naming the problem; nothing is read outside the mapped file.
#pragma once

#include "arbor/error.h"
#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace arbor {

// Metadata value types, numbered as in the GGUF format.
enum class GgufType : uint32_t {
    Uint8 = 0, Int8 = 1, Uint16 = 2, Int16 = 3, Uint32 = 4, Int32 = 5, Float32 = 6,
    Bool = 7, String = 8, Array = 9, Uint64 = 10, Int64 = 11, Float64 = 12,
};
std::string_view gguf_type_name(GgufType type);

struct GgufValue {
    GgufType type = GgufType::Uint8;
    GgufType element_type = GgufType::Uint8;  // meaningful for arrays only
    std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> data;

    // Numeric accessors convert between integer kinds when the value fits, else nullopt.
    std::optional<uint64_t> as_uint() const;
    std::optional<int64_t> as_int() const;
    std::optional<double> as_float() const;  // any numeric type
    std::optional<bool> as_bool() const;
    const std::string* as_string() const;
    const std::vector<GgufValue>* as_array() const;
};

struct GgufTensor {
    std::string name;
    DType type;
    std::vector<int64_t> dims;   // dims[0] is the contiguous (row) dimension
    int64_t n_elements = 0;
    uint64_t offset = 0;          // from the start of the data section
    size_t n_bytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping

    int64_t rows() const;         // product of dims[1..]
    int64_t cols() const { return dims.empty() ? 1 : dims[0]; }
};

class GgufFile {
public:
    // Maps and validates the whole file. Throws arbor::Error.
    static std::unique_ptr<GgufFile> open(const std::filesystem::path& path);
    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::filesystem::path& path() const { return path_; }
    uint32_t version() const { return version_; }
    size_t alignment() const { return alignment_; }

    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;

    // Typed look-ups: nullopt when absent; arbor::Error naming the key when present with
    // a type that does not convert.
    std::optional<std::string> get_string(std::string_view key) const;
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;
    std::optional<bool> get_bool(std::string_view key) const;
    // Same, but a missing key is an arbor::Error naming it.
    std::string require_string(std::string_view key) const;
    uint64_t require_uint(std::string_view key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;

    // For data a caller has copied elsewhere (weights repacked for a backend): releases
    // this process's resident copy of the whole pages of [data, data + bytes), which must
    // lie inside the mapped file. The bytes stay readable; touched again, they are read
    // from the file (or the page cache) anew.
    void release_pages(const uint8_t* data, size_t bytes) const;
    // The mapped file's bytes.
    const uint8_t* mapping_begin() const { return map_; }
    size_t mapping_size() const { return map_size_; }

private:
    GgufFile() = default;
    struct Parser;

    std::filesystem::path path_;
    uint32_t version_ = 0;
    size_t alignment_ = 32;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<GgufTensor> tensors_;
    // Views of the names stored in metadata_ / tensors_, which never change after open.
    std::unordered_map<std::string_view, size_t> key_index_;
    std::unordered_map<std::string_view, size_t> tensor_index_;
    const uint8_t* map_ = nullptr;
    size_t map_size_ = 0;
};

} // namespace arbor
