// Shared by the quantized-kernel suites: reading tests/data/quant files, making random
// valid weight rows, and decoding activation blocks independently of the kernels.
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/quant.h"

#include <cstdint>
#include <filesystem>
#include <random>
#include <vector>

namespace arbor::test {

// A tests/data/quant file: "AQT1", type id, rows, elements per row (uint32 LE), then
// for weight files the raw blocks followed by the expected floats, and for act_*
// files the input floats followed by the expected blocks. See the README there.
struct QuantFile {
    DType type = DType::F32;
    int rows = 0;
    int64_t n = 0;                // elements per row
    std::vector<uint8_t> blocks;  // rows * row_bytes(type, n)
    std::vector<float> values;    // rows * n
};
enum class QuantFileKind { Weights, Activations };
// Throws std::runtime_error when the file is missing or malformed.
QuantFile read_quant_file(const std::filesystem::path& path, QuantFileKind kind);

// The weight types with every kernel (dequantization, int8 dot products, float products).
const std::vector<DType>& weight_types();
// The weight types with dequantization and float products only (Q2_K, Q3_K, IQ4_NL,
// IQ4_XS, MXFP4).
const std::vector<DType>& low_bit_weight_types();

// n elements of random bytes for `type` with finite half-float scale fields
// (non-negative d/dmin for Q4_K/Q5_K as in real files); random floats for F32/F16/BF16.
std::vector<uint8_t> random_weight_row(DType type, int64_t n, std::mt19937& rng);
// Normal values with a per-row scale and offset.
std::vector<float> random_activations(int64_t n, std::mt19937& rng);

// Values of an activation row (Q8_0, Q8_1, Q8_K as d * q; F32 as is), decoded here
// without the kernels.
std::vector<float> decode_activations(DType act_type, const void* row, int64_t n);
// Per-element bound on |x - decoded| from the block scales (half a quantization step).
std::vector<float> activation_step(DType act_type, const void* row, int64_t n);
// sum over blocks of |m_x * s_y| for the types with a minimum (Q4_1, Q5_1), else 0:
// the dot uses s_y = fp16(d * sum q), which differs from sum(decoded) by ~2^-11.
double min_term_magnitude(DType weight, const void* w, const void* act, int64_t n);

} // namespace arbor::test
