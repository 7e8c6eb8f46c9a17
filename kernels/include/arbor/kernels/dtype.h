// Element types of tensors as numbered in GGUF files, with their block layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace arbor {

// Values are the GGUF/ggml type ids; only the listed ones are known to Arbor.
enum class DType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,   // activation type only
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,  // activation type only
    IQ4_NL = 20,
    IQ4_XS = 23,
    BF16 = 30,
    MXFP4 = 39,
};

struct DTypeInfo {
    DType type;
    std::string_view name;
    int64_t block_size;   // elements per block
    size_t block_bytes;   // bytes per block
    bool weight_type;     // may appear as a model weight
};

// Metadata for a raw GGUF type id, or nullopt when Arbor does not know the type.
std::optional<DTypeInfo> dtype_info(uint32_t raw_type);
const DTypeInfo& dtype_info(DType type);
std::string_view dtype_name(DType type);

// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_bytes(DType type, int64_t n);

} // namespace arbor
