// The integer path of the decode products: activation rows quantized to int8 blocks of
// 32 (one float scale and the codes' sum per block), and the dot product of one
// 32-element unit of a weight row (see quant_units.cuh for what a unit is) with one such
// block, in integer arithmetic (dp4a on packed 32-bit words) and one float scaling.
//
// Plain C++ when compiled by the host compiler, so that a CPU test checks the arithmetic
// against the scalar dequantization without a GPU; the same functions run in the kernels.
//
// With a = d * q the quantized activation, each unit's result is the dot product of the
// scalar-dequantized weights with a up to float rounding of a few products (the integer
// sums are exact); a differs from the float activation by at most d / 2 per element.
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define ARBOR_Q8 __host__ __device__ __forceinline__
#else
#define ARBOR_Q8 inline
#endif

namespace arbor::cuda::q8 {

constexpr int kBlock = 32;

// Layout of one quantized activation row of `cols` (a multiple of 32): the codes, then a
// Scale per block; rows follow each other at row_bytes, a multiple of 16 so that every
// row's codes can be read 16 bytes at a time.
struct Scale {
    float d;      // block scale: element i is d * code i
    int32_t sum;  // sum of the block's codes
};
ARBOR_Q8 size_t row_bytes(int64_t cols) {
    return (size_t(cols) + size_t(cols / kBlock) * sizeof(Scale) + 15) / 16 * 16;
}
ARBOR_Q8 const Scale* scales_of(const uint8_t* row, int64_t cols) {
    return reinterpret_cast<const Scale*>(row + cols);
}

// The block's scale from its largest magnitude, and an element's code (round to nearest
// even, |code| <= 127). Kernels and host use these same two expressions, so a block
// quantizes to the same bits on either.
ARBOR_Q8 float scale_for(float amax) { return amax / 127.0f; }
ARBOR_Q8 int8_t code(float x, float d) {
#ifdef __CUDA_ARCH__
    return d == 0.0f ? int8_t(0) : int8_t(__float2int_rn(x / d));
#else
    return d == 0.0f ? int8_t(0) : int8_t(std::nearbyint(x / d));
#endif
}

// Host form of the quantizer (the kernel spreads a block over a warp's lanes).
inline void quantize_row(const float* x, int64_t cols, uint8_t* row) {
    auto* codes = reinterpret_cast<int8_t*>(row);
    auto* scales = reinterpret_cast<Scale*>(row + cols);
    for (int64_t b = 0; b < cols / kBlock; ++b) {
        float amax = 0.0f;
        for (int i = 0; i < kBlock; ++i) amax = std::fmax(amax, std::fabs(x[b * kBlock + i]));
        const float d = scale_for(amax);
        int32_t sum = 0;
        for (int i = 0; i < kBlock; ++i) sum += codes[b * kBlock + i] = code(x[b * kBlock + i], d);
        scales[b] = {d, sum};
    }
}

ARBOR_Q8 float half_to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    return fp16_to_fp32(h);
#endif
}

// Sum of the four signed byte products of a and b, plus c.
ARBOR_Q8 int dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; ++i) c += int(int8_t(uint32_t(a) >> (8 * i))) * int(int8_t(uint32_t(b) >> (8 * i)));
    return c;
#endif
}

// Two bytes at a 2-byte aligned p; four bytes at p, little-endian, p 2-byte aligned
// (word2) or 4-byte aligned (word4).
ARBOR_Q8 uint16_t half_bits(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    return __ldg(reinterpret_cast<const unsigned short*>(p));
#else
    uint16_t h;
    std::memcpy(&h, p, 2);
    return h;
#endif
}
ARBOR_Q8 uint32_t word2(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    const auto* h = reinterpret_cast<const uint16_t*>(p);
    return uint32_t(__ldg(h)) | (uint32_t(__ldg(h + 1)) << 16);
#else
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w;
#endif
}
ARBOR_Q8 uint32_t word4(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    return __ldg(reinterpret_cast<const uint32_t*>(p));
#else
    return word2(p);
#endif
}
// Sixteen bytes at a 16-byte aligned p as four words.
ARBOR_Q8 void words16(const uint8_t* p, uint32_t* w) {
#ifdef __CUDA_ARCH__
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
    std::memcpy(w, p, 16);
#endif
}

// An activation block: its 32 codes as eight words (element 4j + i in byte i of word j),
// its scale and its codes' sum.
struct Act {
    uint32_t w[8];
    float d;
    int32_t sum;
};
ARBOR_Q8 Act act_block(const uint8_t* row, int64_t cols, int b) {
    Act a;
    words16(row + b * kBlock, a.w);
    words16(row + b * kBlock + 16, a.w + 4);
    const Scale s = scales_of(row, cols)[b];
    a.d = s.d, a.sum = s.sum;
    return a;
}

// Six-bit scale and min of sub-block j of a Q4_K/Q5_K super-block (see block_bits.h).
ARBOR_Q8 void scale_min(const uint8_t* s, int j, int& sc, int& mn) {
    if (j < 4) {
        sc = s[j] & 63;
        mn = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
        mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// A weight unit made ready for dp4a: its 32 codes as eight words (element 4j + i in byte
// i of word j, as the activation's), and the scales that turn their integer dot into
// the unit's value (which of d, m, sc are used is the type's).
struct WeightUnit {
    uint32_t q[8];
    float d, m;
    int sc[2];
};

// Dot<T>::load(row, u) reads unit u of a weight row of type T; Dot<T>::dot(w, a) is its
// dot product with activation block a, and unit(row, u, a) the two together. Loading
// once serves all the activation rows of a product.
template <DType T>
struct Dot;

template <DType T>
ARBOR_Q8 float unit_dot(const uint8_t* row, int u, const Act& a) {
    return Dot<T>::dot(Dot<T>::load(row, u), a);
}

// The 32-element 4-bit types: byte j of qs holds element j (low nibble) and j + 16
// (high), so qs word k's low nibbles are code word k, its high nibbles word 4 + k.
ARBOR_Q8 void split_nibbles(const uint8_t* qs, bool aligned4, uint32_t* q) {
    for (int k = 0; k < 4; ++k) {
        const uint32_t w = aligned4 ? word4(qs + 4 * k) : word2(qs + 4 * k);
        q[k] = w & 0x0f0f0f0fu;
        q[4 + k] = (w >> 4) & 0x0f0f0f0fu;
    }
}

ARBOR_Q8 int dot_codes(const uint32_t* q, const uint32_t* a) {
    int s = 0;
    for (int k = 0; k < 8; ++k) s = dp4a(int(q[k]), int(a[k]), s);
    return s;
}

template <>
struct Dot<DType::Q4_0> {
    ARBOR_Q8 static WeightUnit load(const uint8_t* row, int u) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ4_0);
        WeightUnit w{};
        split_nibbles(b + offsetof(BlockQ4_0, qs), false, w.q);
        w.d = half_to_float(half_bits(b));
        return w;
    }
    // (q - 8) . code = q . code - 8 * sum(code), exactly
    ARBOR_Q8 static float dot(const WeightUnit& w, const Act& a) {
        return w.d * a.d * float(dot_codes(w.q, a.w) - 8 * a.sum);
    }
};

template <>
struct Dot<DType::Q4_1> {
    ARBOR_Q8 static WeightUnit load(const uint8_t* row, int u) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ4_1);
        WeightUnit w{};
        split_nibbles(b + offsetof(BlockQ4_1, qs), true, w.q);
        const uint32_t dm = word4(b);
        w.d = half_to_float(uint16_t(dm & 0xffffu)), w.m = half_to_float(uint16_t(dm >> 16));
        return w;
    }
    ARBOR_Q8 static float dot(const WeightUnit& w, const Act& a) {
        return a.d * (w.d * float(dot_codes(w.q, a.w)) + w.m * float(a.sum));
    }
};

template <>
struct Dot<DType::Q8_0> {
    ARBOR_Q8 static WeightUnit load(const uint8_t* row, int u) {
        const uint8_t* b = row + size_t(u) * sizeof(BlockQ8_0);
        WeightUnit w{};
        for (int k = 0; k < 8; ++k) w.q[k] = word2(b + offsetof(BlockQ8_0, qs) + 4 * k);
        w.d = half_to_float(half_bits(b));
        return w;
    }
    ARBOR_Q8 static float dot(const WeightUnit& w, const Act& a) { return w.d * a.d * float(dot_codes(w.q, a.w)); }
};

// Q4_K and Q5_K: unit u is sub-block u % 8 of super-block u / 8, its element l in byte
// l of the sub-block pair's 32 qs bytes (low nibble for even sub-blocks); Q5_K has the
// fifth bit of element l of sub-block j in bit j of qh[l]. Value: d * sc * q - dmin * mn.
template <class Block, bool FIFTH_BIT>
struct DotK {
    ARBOR_Q8 static WeightUnit load(const uint8_t* row, int u) {
        const uint8_t* b = row + size_t(u / 8) * sizeof(Block);
        const int sub = u % 8, shift = 4 * (sub & 1);
        const uint8_t* qs = b + offsetof(Block, qs) + 32 * (sub / 2);
        WeightUnit w{};
        words16(qs, w.q);
        words16(qs + 16, w.q + 4);
        for (int k = 0; k < 8; ++k) w.q[k] = (w.q[k] >> shift) & 0x0f0f0f0fu;
        if constexpr (FIFTH_BIT) {
            uint32_t h[8];
            words16(b + offsetof(Block, qh), h);
            words16(b + offsetof(Block, qh) + 16, h + 4);
            for (int k = 0; k < 8; ++k) w.q[k] |= ((h[k] >> sub) & 0x01010101u) << 4;
        }
        int sc, mn;
        scale_min(b + offsetof(Block, scales), sub, sc, mn);
        const uint32_t dm = word4(b);
        w.d = half_to_float(uint16_t(dm & 0xffffu)) * float(sc);
        w.m = half_to_float(uint16_t(dm >> 16)) * float(mn);
        return w;
    }
    ARBOR_Q8 static float dot(const WeightUnit& w, const Act& a) {
        return a.d * (w.d * float(dot_codes(w.q, a.w)) - w.m * float(a.sum));
    }
};
template <>
struct Dot<DType::Q4_K> : DotK<BlockQ4_K, false> {};
template <>
struct Dot<DType::Q5_K> : DotK<BlockQ5_K, true> {};

// Q6_K: unit k of a super-block is quarter k % 4 of half k / 4 (see dequant_scalar.cpp);
// its elements 0-15 and 16-31 have their own scales. Value: d * sc * (q - 32).
template <>
struct Dot<DType::Q6_K> {
    ARBOR_Q8 static WeightUnit load(const uint8_t* row, int u) {
        const uint8_t* b = row + size_t(u / 8) * sizeof(BlockQ6_K);
        const int k = u % 8, half = k / 4, j = k % 4;
        const uint8_t* ql = b + offsetof(BlockQ6_K, ql) + 64 * half + 32 * (j & 1);
        const uint8_t* qh = b + offsetof(BlockQ6_K, qh) + 32 * half;
        const int lshift = 4 * (j >> 1), hshift = 2 * j;
        WeightUnit w{};
        for (int i = 0; i < 8; ++i)
            w.q[i] = ((word2(ql + 4 * i) >> lshift) & 0x0f0f0f0fu) | (((word2(qh + 4 * i) >> hshift) & 0x03030303u) << 4);
        const auto* sc = reinterpret_cast<const int8_t*>(b + offsetof(BlockQ6_K, scales)) + 8 * half + 2 * j;
        w.sc[0] = sc[0], w.sc[1] = sc[1];
        w.d = half_to_float(half_bits(b + offsetof(BlockQ6_K, d)));
        return w;
    }
    ARBOR_Q8 static float dot(const WeightUnit& w, const Act& a) {
        int total = 0;
        for (int h = 0; h < 2; ++h) {
            int s = 0, sum = 0;
            for (int k = 4 * h; k < 4 * h + 4; ++k) {
                s = dp4a(int(w.q[k]), int(a.w[k]), s);
                sum = dp4a(0x01010101, int(a.w[k]), sum);
            }
            total += w.sc[h] * (s - 32 * sum);
        }
        return w.d * a.d * float(total);
    }
};

// Whether type has a Dot (the types whose decode products take the integer path).
ARBOR_Q8 bool has_dot(DType type) {
    return type == DType::Q4_0 || type == DType::Q4_1 || type == DType::Q8_0 || type == DType::Q4_K ||
           type == DType::Q5_K || type == DType::Q6_K;
}

} // namespace arbor::cuda::q8
