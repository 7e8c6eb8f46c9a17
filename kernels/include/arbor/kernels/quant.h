// CPU kernels on quantized rows: dequantization, activation quantization and dot
// products, bit-compatible with ggml's block formats. Every kernel has a scalar
// reference; an AVX2/FMA/F16C variant is chosen at run time when the CPU has it.
//
// A matrix-vector product over a quantized weight matrix goes:
//   act_type = vec_dot_type(weight_type);
//   quantize_row(act_type, x, xq, n);                 // once per activation row
//   y[i] = vec_dot_fn(weight_type)(n, w_row(i), xq);  // once per weight row
// (or vec_dot_rows_fn for a range of weight rows, vec_dot_multi_fn for a weight row
// against several activation rows).
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace arbor {

// Kernel sets, in order of preference. Every set past Scalar includes AVX2, FMA and F16C;
// AvxVnni adds the VEX-encoded 256-bit VNNI of recent Intel cores (vpdpwssd), Avx512 the
// 512-bit registers with AVX-512 F, BW, DQ, VL and VNNI (with the OS saving their state).
// The row kernels below (dequantize_row, quantize_row, vec_dot_*) have scalar and AVX2
// versions: a higher set runs their AVX2 ones. The panel products (panel_weights.h) have
// one version per set.
enum class Isa { Scalar, Avx2, AvxVnni, Avx512 };

// Best kernel set this CPU runs, detected once. The environment variable ARBOR_CPU_ISA
// (scalar, avx2, avx_vnni or avx512) makes the sets after the named one unsupported (with
// scalar, only the references run), to debug, to compare the sets on one machine, or to
// test a fallback on a machine that has more.
Isa best_isa();
bool isa_supported(Isa isa);
std::string_view isa_name(Isa isa);

// Type activations are quantized to before a dot with a row of `weight`:
// Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for Q4_K/Q5_K/Q6_K,
// F32 for F32/F16/BF16. Throws std::invalid_argument for a type without dot products
// (has_int8_dot false: the activation types, and Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4,
// which have float products only, float_dot.h).
DType vec_dot_type(DType weight);
bool has_int8_dot(DType weight);

// The entry points below throw std::invalid_argument when the type is not handled,
// n is negative or not a multiple of the type's block size, or `isa` is not
// supported by this CPU. Rows are tightly packed blocks (GGUF tensor data).

// dst[0..n) = values of the weight row src (any weight type).
void dequantize_row(DType type, const void* src, float* dst, int64_t n, Isa isa = best_isa());

// Quantizes activations to act_type: Q8_0, Q8_1, Q8_K (rounding exactly as ggml's
// reference quantizers) or F32 (a copy). dst holds row_bytes(act_type, n) bytes.
void quantize_row(DType act_type, const float* src, void* dst, int64_t n, Isa isa = best_isa());

// Dot product of a weight row with an activation row of vec_dot_type(weight).
// n is a multiple of the weight's block size; no checks on the hot path.
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* act_row);
VecDotFn vec_dot_fn(DType weight, Isa isa = best_isa());

// One weight row against n_act activation rows (e.g. the tokens of a prefill chunk):
//   out[r * out_stride] = dot(weight_row, (const char*)act_rows + r * act_stride)
// for r in [0, n_act). The weight blocks are unpacked once for all rows.
using VecDotMultiFn = void (*)(int64_t n, const void* weight_row, const void* act_rows,
                               size_t act_stride, int n_act, float* out, int64_t out_stride);
VecDotMultiFn vec_dot_multi_fn(DType weight, Isa isa = best_isa());

// n_rows weight rows against one activation row (a matrix-vector product, decode):
//   out[r * out_stride] = dot((const char*)weight_rows + r * weight_stride, act_row)
// for r in [0, n_rows). Each activation block is loaded and scaled once for a group
// of weight rows, and the per-call overhead is paid once: prefer it to a loop over
// vec_dot_fn when rows are short (e.g. 576 elements).
using VecDotRowsFn = void (*)(int64_t n, const void* weight_rows, size_t weight_stride, int64_t n_rows,
                              const void* act_row, float* out, int64_t out_stride);
VecDotRowsFn vec_dot_rows_fn(DType weight, Isa isa = best_isa());

} // namespace arbor
