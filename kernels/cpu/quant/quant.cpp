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

#if defined(__x86_64__) || defined(__i386__)
struct CpuidRegs {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
    CpuidRegs r;
    if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
    return r;
}

// The register state the OS saves on a context switch (XCR0); a set whose registers it
// does not save must not run even where cpuid lists it.
uint64_t os_saved_state() {
    if ((cpuid(1, 0).ecx & bit_OSXSAVE) == 0) return 0;
    unsigned lo = 0, hi = 0;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t(hi) << 32) | lo;
}
#endif

// Whether the CPU and the OS allow `isa`, before ARBOR_CPU_ISA.
bool cpu_runs(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
    const CpuidRegs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l7s1 = cpuid(7, 1);
    const uint64_t xcr0 = os_saved_state();
    constexpr uint64_t kYmm = 0x6, kZmm = 0xe0;  // SSE + AVX state; opmask + both zmm halves
    const bool avx2 = (xcr0 & kYmm) == kYmm && (l1.ecx & bit_AVX) && (l1.ecx & bit_FMA) && (l1.ecx & bit_F16C) &&
                      (l7.ebx & bit_AVX2);
    switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return avx2;
    case Isa::AvxVnni: return avx2 && (l7s1.eax & bit_AVXVNNI);
    case Isa::Avx512:
        return avx2 && (xcr0 & kZmm) == kZmm && (l7.ebx & bit_AVX512F) && (l7.ebx & bit_AVX512DQ) &&
               (l7.ebx & bit_AVX512BW) && (l7.ebx & bit_AVX512VL) && (l7.ecx & bit_AVX512VNNI);
    }
    return false;
#else
    return isa == Isa::Scalar;
#endif
}

// ARBOR_CPU_ISA: the most the kernels may use (unset or unknown: no limit).
Isa isa_limit() {
    const char* forced = std::getenv("ARBOR_CPU_ISA");
    if (!forced) return Isa::Avx512;
    const std::string name = forced;
    if (name == "scalar") return Isa::Scalar;
    if (name == "avx2") return Isa::Avx2;
    if (name == "avx_vnni") return Isa::AvxVnni;
    return Isa::Avx512;
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

// The AVX2 version for every set past Scalar (the row kernels have no wider ones).
template <class Fn>
Fn pick(Fn scalar, Fn avx2, Isa isa) {
    return isa != Isa::Scalar && avx2 ? avx2 : scalar;
}

} // namespace

bool isa_supported(Isa isa) {
    static const Isa limit = isa_limit();
    static const bool runs[] = {true, cpu_runs(Isa::Avx2), cpu_runs(Isa::AvxVnni), cpu_runs(Isa::Avx512)};
    // Not nested beyond AVX2: Zen 4 and Xeons before Sapphire Rapids have AVX-512 VNNI
    // without the VEX-encoded AVX-VNNI, Intel's client cores the reverse.
    return isa <= limit && runs[int(isa)];
}

Isa best_isa() {
    for (Isa isa : {Isa::Avx512, Isa::AvxVnni, Isa::Avx2})
        if (isa_supported(isa)) return isa;
    return Isa::Scalar;
}

std::string_view isa_name(Isa isa) {
    switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "AVX2";
    case Isa::AvxVnni: return "AVX-VNNI";
    case Isa::Avx512: return "AVX-512 VNNI";
    }
    return "scalar";
}

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
                         isa != Isa::Scalar ? quant::avx2_dequant(type) : nullptr, isa);
    if (!fn) fail("dequantize_row: no kernel for " + std::string(dtype_name(type)));
    check_length(type, n, "dequantize_row");
    fn(src, dst, n);
}

void quantize_row(DType act_type, const float* src, void* dst, int64_t n, Isa isa) {
    check_isa(isa, "quantize_row");
    const auto fn = pick(quant::scalar_quant(act_type),
                         isa != Isa::Scalar ? quant::avx2_quant(act_type) : nullptr, isa);
    if (!fn)
        fail("quantize_row: " + std::string(dtype_name(act_type)) + " is not an activation type");
    check_length(act_type, n, "quantize_row");
    fn(src, dst, n);
}

VecDotFn vec_dot_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_fn");
    const auto fn = pick(quant::scalar_vec_dot(weight),
                         isa != Isa::Scalar ? quant::avx2_vec_dot(weight) : nullptr, isa);
    if (!fn) fail("vec_dot_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

VecDotMultiFn vec_dot_multi_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_multi_fn");
    const auto fn = pick(quant::scalar_vec_dot_multi(weight),
                         isa != Isa::Scalar ? quant::avx2_vec_dot_multi(weight) : nullptr, isa);
    if (!fn)
        fail("vec_dot_multi_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

VecDotRowsFn vec_dot_rows_fn(DType weight, Isa isa) {
    check_isa(isa, "vec_dot_rows_fn");
    const auto fn = pick(quant::scalar_vec_dot_rows(weight),
                         isa != Isa::Scalar ? quant::avx2_vec_dot_rows(weight) : nullptr, isa);
    if (!fn)
        fail("vec_dot_rows_fn: no kernel for weight type " + std::string(dtype_name(weight)));
    return fn;
}

} // namespace arbor
