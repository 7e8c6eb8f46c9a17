// Per-ISA kernel lookups behind the public quant.h API. Each returns nullptr for a
// type the ISA has no kernel for.
#pragma once

#include "arbor/kernels/quant.h"

namespace arbor::quant {

using DequantFn = void (*)(const void* src, float* dst, int64_t n);
using QuantFn = void (*)(const float* src, void* dst, int64_t n);

DequantFn scalar_dequant(DType type);
DequantFn scalar_dequant_low_bits(DType type);  // Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4
QuantFn scalar_quant(DType act_type);
VecDotFn scalar_vec_dot(DType weight);         // all weight types
VecDotFn scalar_vec_dot_kquant(DType weight);  // Q4_K, Q5_K, Q6_K
VecDotMultiFn scalar_vec_dot_multi(DType weight);
VecDotRowsFn scalar_vec_dot_rows(DType weight);

// Defined in translation units built with -mavx2 -mfma -mf16c: call only after
// checking isa_supported(Isa::Avx2).
DequantFn avx2_dequant(DType type);
DequantFn avx2_dequant_low_bits(DType type);    // Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4
QuantFn avx2_quant(DType act_type);
VecDotFn avx2_vec_dot(DType weight);            // all weight types
VecDotMultiFn avx2_vec_dot_multi(DType weight); // all weight types
VecDotRowsFn avx2_vec_dot_rows(DType weight);   // all weight types
VecDotFn avx2_vec_dot_float(DType weight);      // F32, F16, BF16
VecDotMultiFn avx2_vec_dot_multi_float(DType weight);
VecDotRowsFn avx2_vec_dot_rows_float(DType weight);
VecDotFn avx2_vec_dot_kquant(DType weight);     // Q4_K, Q5_K, Q6_K
VecDotMultiFn avx2_vec_dot_multi_kquant(DType weight);
VecDotRowsFn avx2_vec_dot_rows_kquant(DType weight);

} // namespace arbor::quant
