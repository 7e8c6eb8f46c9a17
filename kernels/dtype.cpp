#include "arbor/kernels/dtype.h"

#include "arbor/kernels/quant_blocks.h"

#include <array>
#include <stdexcept>

namespace arbor {
namespace {

constexpr std::array kTypes = {
    DTypeInfo{DType::F32, "F32", 1, 4, true},
    DTypeInfo{DType::F16, "F16", 1, 2, true},
    DTypeInfo{DType::BF16, "BF16", 1, 2, true},
    DTypeInfo{DType::Q4_0, "Q4_0", QK4_0, sizeof(BlockQ4_0), true},
    DTypeInfo{DType::Q4_1, "Q4_1", QK4_1, sizeof(BlockQ4_1), true},
    DTypeInfo{DType::Q5_0, "Q5_0", QK5_0, sizeof(BlockQ5_0), true},
    DTypeInfo{DType::Q5_1, "Q5_1", QK5_1, sizeof(BlockQ5_1), true},
    DTypeInfo{DType::Q8_0, "Q8_0", QK8_0, sizeof(BlockQ8_0), true},
    DTypeInfo{DType::Q8_1, "Q8_1", QK8_1, sizeof(BlockQ8_1), false},
    DTypeInfo{DType::Q4_K, "Q4_K", QK_K, sizeof(BlockQ4_K), true},
    DTypeInfo{DType::Q5_K, "Q5_K", QK_K, sizeof(BlockQ5_K), true},
    DTypeInfo{DType::Q6_K, "Q6_K", QK_K, sizeof(BlockQ6_K), true},
    DTypeInfo{DType::Q8_K, "Q8_K", QK_K, sizeof(BlockQ8_K), false},
    DTypeInfo{DType::Q2_K, "Q2_K", QK_K, sizeof(BlockQ2_K), true},
    DTypeInfo{DType::Q3_K, "Q3_K", QK_K, sizeof(BlockQ3_K), true},
    DTypeInfo{DType::IQ4_NL, "IQ4_NL", QK4_NL, sizeof(BlockIQ4_NL), true},
    DTypeInfo{DType::IQ4_XS, "IQ4_XS", QK_K, sizeof(BlockIQ4_XS), true},
    DTypeInfo{DType::MXFP4, "MXFP4", QK_MXFP4, sizeof(BlockMXFP4), true},
};

} // namespace

std::optional<DTypeInfo> dtype_info(uint32_t raw_type) {
    for (const auto& t : kTypes)
        if (uint32_t(t.type) == raw_type) return t;
    return std::nullopt;
}

const DTypeInfo& dtype_info(DType type) {
    for (const auto& t : kTypes)
        if (t.type == type) return t;
    throw std::logic_error("dtype_info: type not in table");
}

std::string_view dtype_name(DType type) { return dtype_info(type).name; }

size_t row_bytes(DType type, int64_t n) {
    const auto& info = dtype_info(type);
    return size_t(n / info.block_size) * info.block_bytes;
}

} // namespace arbor
