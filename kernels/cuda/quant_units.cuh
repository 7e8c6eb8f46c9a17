// Device-side dequantization in units of 32 consecutive elements of a row, for every
// weight type: unit u of a 32-element block type is block u; of a k-quant, elements
// 32 * (u % 8) .. + 31 of super-block u / 8; load gives a whole unit. Values follow the
// scalar reference (kernels/cpu/quant/dequant_scalar.cpp) expression by expression.
// Codes become floats through small_uint_to_float (exact, and several times the rate of
// an integer conversion), and load reads its unit's bytes in the widest words the block's
// alignment allows: a lane of the float decode products dequantizes whole units, so
// these two costs set its speed.
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/quant_blocks.h"
#include "q8_dot.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace arbor::cuda {

__device__ __forceinline__ float half_at(const uint8_t* p) {
    return __half2float(__ushort_as_half(uint16_t(p[0] | (p[1] << 8))));
}

// float(q) for 0 <= q < 2^23, exactly, without an integer conversion (those run at a
// fraction of the float units' rate): 2^23 + q has q in its mantissa.
__device__ __forceinline__ float small_uint_to_float(uint32_t q) {
    return __fsub_rn(__uint_as_float(0x4B000000u | q), 8388608.0f);
}

// Four bytes at a 2-byte aligned address, little-endian.
__device__ __forceinline__ uint32_t load_u16_pair(const uint8_t* p) {
    const auto* h = reinterpret_cast<const uint16_t*>(p);
    return uint32_t(__ldg(h)) | (uint32_t(__ldg(h + 1)) << 16);
}

__device__ __forceinline__ uint32_t load_u32(const uint8_t* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

template <DType T>
struct Units;

template <>
struct Units<DType::F32> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const float4* p = reinterpret_cast<const float4*>(row) + 8 * u;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const float4 f = __ldg(p + i);
            v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
        }
    }
};

template <>
struct Units<DType::F16> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint4* p = reinterpret_cast<const uint4*>(row) + 4 * u;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const uint4 w = __ldg(p + i);
            const __half2* h = reinterpret_cast<const __half2*>(&w);
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float2 f = __half22float2(h[j]);
                v[8 * i + 2 * j] = f.x, v[8 * i + 2 * j + 1] = f.y;
            }
        }
    }
};

template <>
struct Units<DType::BF16> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint4* p = reinterpret_cast<const uint4*>(row) + 4 * u;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const uint4 w = __ldg(p + i);
            const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                v[8 * i + 2 * j] = __uint_as_float(words[j] << 16);
                v[8 * i + 2 * j + 1] = __uint_as_float(words[j] & 0xffff0000u);
            }
        }
    }
};

// In the 32-element types, byte j of qs holds element j (low nibble) and j + 16 (high).
template <>
struct Units<DType::Q4_0> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ4_0);
        const float d = half_at(b);
#pragma unroll
        for (int k = 0; k < 4; ++k) {  // blocks are 2-byte aligned
            const uint32_t w = load_u16_pair(b + 2 + 4 * k);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                v[4 * k + e] = __fmul_rn(small_uint_to_float((w >> (8 * e)) & 0x0f) - 8.0f, d);
                v[4 * k + e + 16] = __fmul_rn(small_uint_to_float((w >> (8 * e + 4)) & 0x0f) - 8.0f, d);
            }
        }
    }
};

template <>
struct Units<DType::Q4_1> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ4_1);
        const float d = half_at(b), m = half_at(b + 2);
#pragma unroll
        for (int k = 0; k < 4; ++k) {  // blocks are 4-byte aligned
            const uint32_t w = __ldg(reinterpret_cast<const uint32_t*>(b + 4 + 4 * k));
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                v[4 * k + e] = __fadd_rn(__fmul_rn(small_uint_to_float((w >> (8 * e)) & 0x0f), d), m);
                v[4 * k + e + 16] = __fadd_rn(__fmul_rn(small_uint_to_float((w >> (8 * e + 4)) & 0x0f), d), m);
            }
        }
    }
};

template <>
struct Units<DType::Q5_0> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ5_0);
        const float d = half_at(b);
        const uint32_t qh = load_u32(b + 2);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int q = __ldg(b + 6 + j);
            v[j] = __fmul_rn(small_uint_to_float((q & 0x0f) | (((qh >> j) & 1) << 4)) - 16.0f, d);
            v[j + 16] = __fmul_rn(small_uint_to_float((q >> 4) | (((qh >> (j + 16)) & 1) << 4)) - 16.0f, d);
        }
    }
};

template <>
struct Units<DType::Q5_1> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ5_1);
        const float d = half_at(b), m = half_at(b + 2);
        const uint32_t qh = load_u32(b + 4);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int q = __ldg(b + 8 + j);
            v[j] = __fadd_rn(__fmul_rn(small_uint_to_float((q & 0x0f) | (((qh >> j) & 1) << 4)), d), m);
            v[j + 16] = __fadd_rn(__fmul_rn(small_uint_to_float((q >> 4) | (((qh >> (j + 16)) & 1) << 4)), d), m);
        }
    }
};

template <>
struct Units<DType::Q8_0> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ8_0);
        const float d = half_at(b);
#pragma unroll
        for (int k = 0; k < 8; ++k) {  // blocks are 2-byte aligned
            const uint32_t w = load_u16_pair(b + 2 + 4 * k);
#pragma unroll
            for (int e = 0; e < 4; ++e)
                v[4 * k + e] = __fmul_rn(small_uint_to_float(((w >> (8 * e)) & 0xff) ^ 0x80) - 128.0f, d);
        }
    }
};

// Six-bit scale and min of sub-block s of a Q4_K/Q5_K super-block (see block_bits.h).
using q8::scale_min;

// Q4_K: sub-block s lives in group s / 2 of 32 bytes, low nibbles for even s.
template <>
struct Units<DType::Q4_K> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const auto* b = reinterpret_cast<const BlockQ4_K*>(row) + u / 8;
        const int s = u % 8;
        const float d = __half2float(__ushort_as_half(b->d)), dmin = __half2float(__ushort_as_half(b->dmin));
        int sc, mn;
        scale_min(b->scales, s, sc, mn);
        const float d1 = __fmul_rn(d, small_uint_to_float(sc)), m1 = __fmul_rn(dmin, small_uint_to_float(mn));
        const uint4* q4 = reinterpret_cast<const uint4*>(b->qs + 32 * (s / 2));
        const int shift = 4 * (s & 1);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const uint4 w = __ldg(q4 + i);
            const uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                const uint32_t q = (words[j / 4] >> (8 * (j % 4) + shift)) & 0x0f;
                v[16 * i + j] = __fsub_rn(__fmul_rn(d1, small_uint_to_float(q)), m1);
            }
        }
    }
};

// Q5_K: as Q4_K, with the fifth bit of element 32s + l in bit s of qh[l].
template <>
struct Units<DType::Q5_K> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const auto* b = reinterpret_cast<const BlockQ5_K*>(row) + u / 8;
        const int s = u % 8;
        const float d = half_at(reinterpret_cast<const uint8_t*>(&b->d));
        const float dmin = half_at(reinterpret_cast<const uint8_t*>(&b->dmin));
        int sc, mn;
        scale_min(b->scales, s, sc, mn);
        const float d1 = __fmul_rn(d, small_uint_to_float(sc)), m1 = __fmul_rn(dmin, small_uint_to_float(mn));
        const uint4* q4 = reinterpret_cast<const uint4*>(b->qs + 32 * (s / 2));  // blocks are 16-byte aligned
        const uint4* h4 = reinterpret_cast<const uint4*>(b->qh);
        const int shift = 4 * (s & 1);
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const uint4 w = __ldg(q4 + i), h = __ldg(h4 + i);
            const uint32_t lw[4] = {w.x, w.y, w.z, w.w}, hw[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
            for (int j = 0; j < 16; ++j) {
                const uint32_t lo = (lw[j / 4] >> (8 * (j % 4) + shift)) & 0x0f;
                const uint32_t hi = ((hw[j / 4] >> (8 * (j % 4) + s)) & 1) << 4;
                v[16 * i + j] = __fsub_rn(__fmul_rn(d1, small_uint_to_float(lo | hi)), m1);
            }
        }
    }
};

// Q6_K: unit k is quarter k % 4 of half k / 4 (see dequant_scalar.cpp).
template <>
struct Units<DType::Q6_K> {
    __device__ __forceinline__ static void load(const uint8_t* row, int u, float* v) {
        const auto* b = reinterpret_cast<const BlockQ6_K*>(row) + u / 8;
        const int k = u % 8, h = k / 4, j = k % 4;
        const float d = half_at(reinterpret_cast<const uint8_t*>(&b->d));
        const uint8_t* ql = b->ql + 64 * h + 32 * (j & 1);
        const uint8_t* qh = b->qh + 32 * h;
        const int8_t* sc = b->scales + 8 * h + 2 * j;
        const int lshift = 4 * (j >> 1), hshift = 2 * j;
        const float d0 = __fmul_rn(d, float(sc[0])), d1 = __fmul_rn(d, float(sc[1]));
#pragma unroll
        for (int k = 0; k < 8; ++k) {  // blocks are 2-byte aligned
            const uint32_t lw = load_u16_pair(ql + 4 * k), hw = load_u16_pair(qh + 4 * k);
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const uint32_t c = ((lw >> (8 * e + lshift)) & 0x0f) | (((hw >> (8 * e + hshift)) & 3) << 4);
                v[4 * k + e] = __fmul_rn(k < 4 ? d0 : d1, small_uint_to_float(c) - 32.0f);
            }
        }
    }
};

// Runs Op<Units<T>>::run(args...) for a weight type T; false when unsupported.
template <template <class> class Op, class... Args>
bool with_units(DType type, Args&&... args) {
    switch (type) {
    case DType::F32: Op<Units<DType::F32>>::run(args...); return true;
    case DType::F16: Op<Units<DType::F16>>::run(args...); return true;
    case DType::BF16: Op<Units<DType::BF16>>::run(args...); return true;
    case DType::Q4_0: Op<Units<DType::Q4_0>>::run(args...); return true;
    case DType::Q4_1: Op<Units<DType::Q4_1>>::run(args...); return true;
    case DType::Q5_0: Op<Units<DType::Q5_0>>::run(args...); return true;
    case DType::Q5_1: Op<Units<DType::Q5_1>>::run(args...); return true;
    case DType::Q8_0: Op<Units<DType::Q8_0>>::run(args...); return true;
    case DType::Q4_K: Op<Units<DType::Q4_K>>::run(args...); return true;
    case DType::Q5_K: Op<Units<DType::Q5_K>>::run(args...); return true;
    case DType::Q6_K: Op<Units<DType::Q6_K>>::run(args...); return true;
    default: return false;
    }
}

} // namespace arbor::cuda
