#include "quant_test_util.h"

#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace arbor::test {
namespace {

uint32_t read_u32(const std::vector<uint8_t>& bytes, size_t off) {
    return uint32_t(bytes[off]) | uint32_t(bytes[off + 1]) << 8 | uint32_t(bytes[off + 2]) << 16 |
           uint32_t(bytes[off + 3]) << 24;
}

uint16_t random_half(std::mt19937& rng, bool non_negative) {
    std::uniform_real_distribution<float> exponent(-12.0f, -2.0f);
    float v = std::exp2(exponent(rng));
    if (!non_negative && (rng() & 1)) v = -v;
    return fp32_to_fp16(v);
}

template <class Block>
void set_halves(std::vector<uint8_t>& row, std::mt19937& rng, bool non_negative,
                uint16_t Block::*first, uint16_t Block::*second = nullptr) {
    auto* b = reinterpret_cast<Block*>(row.data());
    for (size_t i = 0; i < row.size() / sizeof(Block); ++i) {
        b[i].*first = random_half(rng, non_negative);
        if (second) b[i].*second = random_half(rng, non_negative);
    }
}

} // namespace

QuantFile read_quant_file(const std::filesystem::path& path, QuantFileKind kind) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 16 || std::memcmp(bytes.data(), "AQT1", 4) != 0)
        throw std::runtime_error(path.string() + ": not an AQT1 file");
    const auto info = dtype_info(read_u32(bytes, 4));
    if (!info) throw std::runtime_error(path.string() + ": unknown type id");
    QuantFile f;
    f.type = info->type;
    f.rows = int(read_u32(bytes, 8));
    f.n = read_u32(bytes, 12);
    const size_t block_bytes = size_t(f.rows) * row_bytes(f.type, f.n);
    const size_t value_bytes = size_t(f.rows) * size_t(f.n) * sizeof(float);
    if (bytes.size() != 16 + block_bytes + value_bytes)
        throw std::runtime_error(path.string() + ": size does not match its header");
    const uint8_t* p = bytes.data() + 16;
    const uint8_t* blocks = kind == QuantFileKind::Weights ? p : p + value_bytes;
    const uint8_t* values = kind == QuantFileKind::Weights ? p + block_bytes : p;
    f.blocks.assign(blocks, blocks + block_bytes);
    f.values.resize(size_t(f.rows) * size_t(f.n));
    std::memcpy(f.values.data(), values, value_bytes);
    return f;
}

const std::vector<DType>& weight_types() {
    static const std::vector<DType> types = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,
                                             DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                             DType::Q4_K, DType::Q5_K, DType::Q6_K};
    return types;
}

const std::vector<DType>& low_bit_weight_types() {
    static const std::vector<DType> types = {DType::Q2_K, DType::Q3_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
    return types;
}

std::vector<uint8_t> random_weight_row(DType type, int64_t n, std::mt19937& rng) {
    std::vector<uint8_t> row(row_bytes(type, n));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {
        for (int64_t i = 0; i < n; ++i) {
            const float v = normal(rng);
            if (type == DType::F32) {
                std::memcpy(row.data() + 4 * i, &v, 4);
            } else {
                const uint16_t h = type == DType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
                std::memcpy(row.data() + 2 * i, &h, 2);
            }
        }
        return row;
    }
    for (auto& byte : row) byte = uint8_t(rng());
    switch (type) {
    case DType::Q4_0: set_halves<BlockQ4_0>(row, rng, false, &BlockQ4_0::d); break;
    case DType::Q4_1: set_halves<BlockQ4_1>(row, rng, false, &BlockQ4_1::d, &BlockQ4_1::m); break;
    case DType::Q5_0: set_halves<BlockQ5_0>(row, rng, false, &BlockQ5_0::d); break;
    case DType::Q5_1: set_halves<BlockQ5_1>(row, rng, false, &BlockQ5_1::d, &BlockQ5_1::m); break;
    case DType::Q8_0: set_halves<BlockQ8_0>(row, rng, false, &BlockQ8_0::d); break;
    case DType::Q4_K: set_halves<BlockQ4_K>(row, rng, true, &BlockQ4_K::d, &BlockQ4_K::dmin); break;
    case DType::Q5_K: set_halves<BlockQ5_K>(row, rng, true, &BlockQ5_K::d, &BlockQ5_K::dmin); break;
    case DType::Q6_K: set_halves<BlockQ6_K>(row, rng, false, &BlockQ6_K::d); break;
    case DType::Q2_K: set_halves<BlockQ2_K>(row, rng, true, &BlockQ2_K::d, &BlockQ2_K::dmin); break;
    case DType::Q3_K: set_halves<BlockQ3_K>(row, rng, false, &BlockQ3_K::d); break;
    case DType::IQ4_NL: set_halves<BlockIQ4_NL>(row, rng, false, &BlockIQ4_NL::d); break;
    case DType::IQ4_XS: set_halves<BlockIQ4_XS>(row, rng, false, &BlockIQ4_XS::d); break;
    case DType::MXFP4: break;  // every exponent byte is a valid scale
    default: throw std::logic_error("random_weight_row: not a weight type");
    }
    return row;
}

std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const float scale = std::exp2(4.0f * uniform(rng));
    const float offset = 0.5f * uniform(rng);
    std::normal_distribution<float> normal(offset, scale);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = normal(rng);
    return x;
}

std::vector<float> decode_activations(DType act_type, const void* row, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    switch (act_type) {
    case DType::F32: std::memcpy(out.data(), row, size_t(n) * 4); break;
    case DType::Q8_0: {
        const auto* b = static_cast<const BlockQ8_0*>(row);
        for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(b[i / 32].d) * float(b[i / 32].qs[i % 32]);
        break;
    }
    case DType::Q8_1: {
        const auto* b = static_cast<const BlockQ8_1*>(row);
        for (int64_t i = 0; i < n; ++i) out[i] = fp16_to_fp32(b[i / 32].d) * float(b[i / 32].qs[i % 32]);
        break;
    }
    case DType::Q8_K: {
        const auto* b = static_cast<const BlockQ8_K*>(row);
        for (int64_t i = 0; i < n; ++i) out[i] = b[i / 256].d * float(b[i / 256].qs[i % 256]);
        break;
    }
    default: throw std::logic_error("decode_activations: not an activation type");
    }
    return out;
}

std::vector<float> activation_step(DType act_type, const void* row, int64_t n) {
    std::vector<float> step(static_cast<size_t>(n), 0.0f);
    for (int64_t i = 0; i < n; ++i) {
        if (act_type == DType::Q8_0)
            step[i] = 0.5f * std::fabs(fp16_to_fp32(static_cast<const BlockQ8_0*>(row)[i / 32].d));
        else if (act_type == DType::Q8_1)
            step[i] = 0.5f * std::fabs(fp16_to_fp32(static_cast<const BlockQ8_1*>(row)[i / 32].d));
        else if (act_type == DType::Q8_K)
            step[i] = 0.5f * std::fabs(static_cast<const BlockQ8_K*>(row)[i / 256].d);
    }
    return step;
}

double min_term_magnitude(DType weight, const void* w, const void* act, int64_t n) {
    const auto* y = static_cast<const BlockQ8_1*>(act);
    double sum = 0.0;
    for (int64_t i = 0; i < n / 32; ++i) {
        float m = 0.0f;
        if (weight == DType::Q4_1) m = fp16_to_fp32(static_cast<const BlockQ4_1*>(w)[i].m);
        else if (weight == DType::Q5_1) m = fp16_to_fp32(static_cast<const BlockQ5_1*>(w)[i].m);
        else return 0.0;
        sum += std::fabs(double(m) * fp16_to_fp32(y[i].s));
    }
    return sum;
}

} // namespace arbor::test
