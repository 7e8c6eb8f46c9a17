// Non-x86 builds: no AVX2 kernels (isa_supported(Isa::Avx2) is false there).
#include "kernel_table.h"

namespace arbor::quant {

DequantFn avx2_dequant(DType) { return nullptr; }
QuantFn avx2_quant(DType) { return nullptr; }
VecDotFn avx2_vec_dot(DType) { return nullptr; }
VecDotMultiFn avx2_vec_dot_multi(DType) { return nullptr; }
VecDotRowsFn avx2_vec_dot_rows(DType) { return nullptr; }
VecDotFn avx2_vec_dot_float(DType) { return nullptr; }
VecDotMultiFn avx2_vec_dot_multi_float(DType) { return nullptr; }
VecDotRowsFn avx2_vec_dot_rows_float(DType) { return nullptr; }
VecDotFn avx2_vec_dot_kquant(DType) { return nullptr; }
VecDotMultiFn avx2_vec_dot_multi_kquant(DType) { return nullptr; }
VecDotRowsFn avx2_vec_dot_rows_kquant(DType) { return nullptr; }

} // namespace arbor::quant
