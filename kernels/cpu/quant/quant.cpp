// Public entry points: CPU feature detection, argument checks, and the choice between
// the scalar references and the AVX2 kernels.
#include "kernel_table.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace arbor {
namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // F16C through cpuid (leaf 1, ECX): Clang's __builtin_cpu_supports does not know it.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
    return false;
#endif
}

// ARBOR_CPU_ISA=scalar hides the SIMD kernels entirely, as on a CPU without them.
bool forced_scalar() {
    const char* forced = std::getenv("ARBOR_CPU_ISA");
    return forced && std::string(forced) == "scalar";
}

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

void check_isa(Isa isa, const char* fn) {
    if (!isa_supported(isa))
        fail(std::string(fn) + ": this CPU does not support " + std::string(isa_name(isa)));
}

void check_length(DType type, int64_t n, const char* fn) {
    const int64_t block = dtype_info(type).block_size;
    if (n < 0 || n % block != 0)
        fail(std::string(fn) + ": row length " + std::to_string(n) + " is not a multiple of " +
             std::to_string(block) + " for " + std::string(dtype_name(type)));
}

template <class Fn>
Fn pick(Fn scalar, Fn avx2, Isa isa) {
    return isa == Isa::Avx2 && avx2 ? avx2 : scalar;
}

} // namespace

bool isa_supported(Isa isa) {
    static const bool avx2 = cpu_has_avx2() && !forced_scalar();
    return isa == Isa::Scalar || (isa == Isa::Avx2 && avx2);
}

Isa best_isa() { return isa_supported(Isa::Avx2) ? Isa::Avx2 : Isa::Scalar; }

std::string_view isa_name(Isa isa) { return isa == Isa::Avx2 ? "AVX2" : "scalar"; }

DType vec_dot_type(DType weight) {
    switch (weight) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return DType::F32;
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0: return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1: return DType::Q8_1;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return DType::Q8_K;
    default: fail("vec_dot_type: " + std::string(dtype_name(weight)) + " weights have no int8 dot product");
    }
}

bool has_int8_dot(DType weight) { return quant::scalar_vec_dot(weight) != nullptr; }

void dequantize_row(DType type, const void* src, float* dst, int64_t n, Isa isa) {
    check_isa(isa, "dequantize_row");
    const auto fn = pick(quant::scalar_dequant(type),
                         isa == Isa::Avx2 ? quant::avx2_dequant(type) : nullptr, isa);
    if (!fn) fail("dequantize_row: no kernel for " + std::string(dtype_name(type)));
    check_length(type, n, "dequantize_row");
    fn(src, dst, n);
}

void quantize_row(DType act_type, const float* src, void* dst, int64_t n, Isa isa) {
    check_isa(isa, "quantize_row");
    const auto fn = pick(quant::scalar_quant(act_type),
                         isa == Isa::Avx2 ? quant::avx2_quant(act_type) : nullptr, isa);
    if (!fn)
        fail("quantize_row: " + std::string(dtype_name(act_type)) + " is not an activation type");
    check_length(act_type, n, "quantize_row");
    fn(src, dst, n);
}

VecDotFn vec_dot_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_fn");
    const auto fn = pick(quant::scalar_vec_dot(weight),
                         isa == Isa::Avx2 ? quant::avx2_vec_dot(weight) : nullptr, isa);
    if (!fn) fail("vec_dot_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

VecDotMultiFn vec_dot_multi_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_multi_fn");
    const auto fn = pick(quant::scalar_vec_dot_multi(weight),
                         isa == Isa::Avx2 ? quant::avx2_vec_dot_multi(weight) : nullptr, isa);
    if (!fn)
        fail("vec_dot_multi_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

VecDotRowsFn vec_dot_rows_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_rows_fn");
    const auto fn = pick(quant::scalar_vec_dot_rows(weight),
                         isa == Isa::Avx2 ? quant::avx2_vec_dot_rows(weight) : nullptr, isa);
    if (!fn)
        fail("vec_dot_rows_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

} // namespace arbor
