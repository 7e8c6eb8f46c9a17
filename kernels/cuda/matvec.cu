// Products of quantized weights with a few activation rows (decode steps), the
// dequantization of weight rows to halves for cuBLAS (steps of many rows), and
// embedding lookups. A warp takes two weight rows (one row of gate and up when gated),
// each lane whole 32-element units of them, so a row's sum is always taken in the same
// order.
#include "arbor/kernels/cuda_kernels.h"
#include "dependent_launch.cuh"
#include "matvec_launch.cuh"
#include "quant_units.cuh"

#include <cuda_runtime.h>

namespace arbor::cuda {
namespace {

constexpr int kWarps = kMatvecWarps;

// A unit's 32 activations in shared memory, padded so that the eight lanes of a
// 128-bit load's wavefront fall in distinct banks (36 floats = 144 bytes a unit).
constexpr int kStagedUnitFloats = 36;

// Lane l dequantizes whole units l, l + 32, ... (U::load) of R weight rows (of gate and
// up when GATED, R = 1) and multiplies them with each x row's matching 32 floats, read
// once for all of them. A unit's products are summed in two chains (even and odd groups
// of four) added at the end, then added to the lane's total; the lanes' totals are
// summed by warp_sum. Nothing in that order depends on n_x, on the rows beside a row, or
// on where x is read from. Rows past the end are computed on a valid row and not stored.
// The block copies the x rows into shared memory 32 units at a time before its warps
// read them: read straight from global memory, a lane's unit is 128 contiguous bytes, so
// each warp-wide load of x touched 32 cache lines (32 L1 wavefronts), and those loads,
// not the weights, set the kernel's speed (three times slower at 8 x rows).
template <class U, int NX, int R, bool GATED>
__global__ void __launch_bounds__(kWarps * 32)
    matvec_units_kernel(Segments seg, size_t row_bytes, int units, const float* x, int64_t ldx, int n_x) {
    let_next_kernel_start();
    const int lane = threadIdx.x % 32;
    int64_t first = (int64_t(blockIdx.x) * kWarps + threadIdx.x / 32) * R;
    const int64_t total = pick(seg.end, seg.n - 1);
    // A warp past the end still takes its part in the block's copies and barriers.
    const bool any = first < total;
    if (!any) first = total - 1;
    StackedRow row[R];
    const uint8_t* w[R];
    bool live[R];
#pragma unroll
    for (int i = 0; i < R; ++i) {
        live[i] = any && first + i < total;
        row[i] = stacked_row(seg, live[i] ? first + i : first);
        w[i] = row[i].weight + size_t(row[i].local) * row_bytes;
    }
    const uint8_t* w_up = GATED ? seg.weight[1] + size_t(row[0].local) * row_bytes : nullptr;
    __shared__ float4 staged[NX * 32 * kStagedUnitFloats / 4];
    wait_for_previous_kernel();
    float acc[R][NX], up[NX];
#pragma unroll
    for (int t = 0; t < NX; ++t) {
        up[t] = 0.0f;
#pragma unroll
        for (int i = 0; i < R; ++i) acc[i][t] = 0.0f;
    }
    for (int base = 0; base < units; base += 32) {
        __syncthreads();  // every warp is done with the chunk before
        const int chunk4 = min(32, units - base) * 8;  // float4s of one x row in this chunk
        for (int i = threadIdx.x; i < n_x * chunk4; i += kWarps * 32) {
            const int t = i / chunk4, k = i % chunk4;
            staged[(t * 32 + k / 8) * (kStagedUnitFloats / 4) + k % 8] =
                __ldg(reinterpret_cast<const float4*>(x + t * ldx + int64_t(base) * 32) + k);
        }
        __syncthreads();
        const int u = base + lane;
        if (u >= units) continue;
        float v[R][32], vu[GATED ? 32 : 1];
#pragma unroll
        for (int i = 0; i < R; ++i) U::load(w[i], u, v[i]);
        if (GATED) U::load(w_up, u, vu);
#pragma unroll
        for (int t = 0; t < NX; ++t) {
            if (t >= n_x) break;
            const float4* xp = &staged[(t * 32 + lane) * (kStagedUnitFloats / 4)];
            float even[R], odd[R], even_up = 0.0f, odd_up = 0.0f;
#pragma unroll
            for (int i = 0; i < R; ++i) even[i] = 0.0f, odd[i] = 0.0f;
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                const float4 xv = xp[c];
#pragma unroll
                for (int i = 0; i < R; ++i) {
                    float& s = c % 2 ? odd[i] : even[i];
                    s = fmaf(v[i][4 * c], xv.x, s);
                    s = fmaf(v[i][4 * c + 1], xv.y, s);
                    s = fmaf(v[i][4 * c + 2], xv.z, s);
                    s = fmaf(v[i][4 * c + 3], xv.w, s);
                }
                if (GATED) {
                    float& s = c % 2 ? odd_up : even_up;
                    s = fmaf(vu[4 * c], xv.x, s);
                    s = fmaf(vu[4 * c + 1], xv.y, s);
                    s = fmaf(vu[4 * c + 2], xv.z, s);
                    s = fmaf(vu[4 * c + 3], xv.w, s);
                }
            }
#pragma unroll
            for (int i = 0; i < R; ++i) acc[i][t] += even[i] + odd[i];
            if (GATED) up[t] += even_up + odd_up;
        }
    }
#pragma unroll
    for (int i = 0; i < R; ++i)
        if (live[i]) store_row<NX, GATED>(row[i], acc[i], up, n_x);  // live is the same for the whole warp
}

template <class U>
__global__ void dequantize_f16_kernel(const uint8_t* weight, size_t row_bytes, int64_t first, int64_t rows,
                                      int units, __half* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= rows * units) return;
    const int64_t r = i / units;
    const int u = int(i % units);
    float v[32];
    U::load(weight + size_t(first + r) * row_bytes, u, v);
    uint4* to = reinterpret_cast<uint4*>(out + r * int64_t(units) * 32 + int64_t(u) * 32);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        uint4 w;
        __half2* h = reinterpret_cast<__half2*>(&w);
#pragma unroll
        for (int j = 0; j < 4; ++j) h[j] = __floats2half2_rn(v[8 * c + 2 * j], v[8 * c + 2 * j + 1]);
        to[c] = w;
    }
}

template <class U>
__global__ void get_rows_kernel(const uint8_t* weight, size_t row_bytes, int units, const int32_t* ids, int n,
                                float* out) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= int64_t(n) * units) return;
    const int t = int(i / units), u = int(i % units);
    float v[32];
    U::load(weight + size_t(ids[t]) * row_bytes, u, v);
    float4* to = reinterpret_cast<float4*>(out + int64_t(t) * units * 32 + int64_t(u) * 32);
#pragma unroll
    for (int c = 0; c < 8; ++c) to[c] = make_float4(v[4 * c], v[4 * c + 1], v[4 * c + 2], v[4 * c + 3]);
}

unsigned blocks_for(int64_t n, int per_block) { return unsigned((n + per_block - 1) / per_block); }

template <class U>
struct Nothing {
    static void run() {}
};

template <class U, int R, bool GATED>
void launch_units(const Segments& seg, size_t rb, int units, const float* x, int64_t ldx, int n_x, cudaStream_t s) {
    const unsigned grid = blocks_for(seg.end[seg.n - 1], kWarps * R), threads = kWarps * 32;
    const auto go = [&](auto kernel) { launch_kernel(kernel, grid, threads, 0, s, seg, rb, units, x, ldx, n_x); };
    if (n_x == 1) go(matvec_units_kernel<U, 1, R, GATED>);
    else if (n_x == 2) go(matvec_units_kernel<U, 2, R, GATED>);
    else if (n_x <= 4) go(matvec_units_kernel<U, 4, R, GATED>);
    else go(matvec_units_kernel<U, 8, R, GATED>);
}

template <class U>
struct Matvec {
    static void run(const Segments& seg, bool gated, size_t rb, int units, const float* x, int64_t ldx, int n_x,
                    cudaStream_t s) {
        // Two rows a warp, or one row of gate and up when gated.
        if (gated) launch_units<U, 1, true>(seg, rb, units, x, ldx, n_x, s);
        else launch_units<U, 2, false>(seg, rb, units, x, ldx, n_x, s);
    }
};

template <class U>
struct DequantizeF16 {
    static void run(const uint8_t* w, size_t rb, int64_t first, int64_t rows, int units, __half* out, cudaStream_t s) {
        // Plain launches: a cuBLAS product is on either side (and get_rows starts the step).
        dequantize_f16_kernel<U><<<blocks_for(rows * units, 256), 256, 0, s>>>(w, rb, first, rows, units, out);
    }
};

template <class U>
struct GetRows {
    static void run(const uint8_t* w, size_t rb, int units, const int32_t* ids, int n, float* out, cudaStream_t s) {
        get_rows_kernel<U><<<blocks_for(int64_t(n) * units, 256), 256, 0, s>>>(w, rb, units, ids, n, out);
    }
};

// The integer path when the activations come quantized and the type has one, else the
// float path.
bool run_matvec(DType type, const Segments& seg, bool gated, int64_t cols, const float* x, int n_x, const void* q8,
                cudaStream_t s) {
    const size_t rb = row_bytes(type, cols);
    if (q8 && launch_matvec_q8(type, seg, gated, rb, cols, q8, n_x, s)) return true;
    return with_units<Matvec>(type, seg, gated, rb, int(cols / 32), x, cols, n_x, s);
}

} // namespace

bool supports(DType type) { return with_units<Nothing>(type); }

bool matvec_multi(DType type, int64_t cols, const MatvecOut* outs, int n_outs, const float* x, int n_x,
                  void* stream, const void* q8) {
    if (n_x <= 0 || n_x > kMatvecRows || n_outs < 1 || n_outs > 3 || !supports(type)) return false;
    Segments seg{};
    seg.n = n_outs;
    int64_t end = 0;
    for (int i = 0; i < n_outs; ++i) {
        seg.weight[i] = static_cast<const uint8_t*>(outs[i].weight);
        seg.y[i] = outs[i].y;
        seg.bias[i] = outs[i].bias;
        seg.end[i] = end += outs[i].rows;
    }
    return run_matvec(type, seg, false, cols, x, n_x, q8, static_cast<cudaStream_t>(stream));
}

bool matvec(DType type, const void* weight, int64_t rows, int64_t cols, const float* x, int n_x, float* y,
            const float* bias, void* stream, const void* q8) {
    const MatvecOut out{weight, rows, y, bias};
    return matvec_multi(type, cols, &out, 1, x, n_x, stream, q8);
}

bool matvec_gated(DType type, int64_t cols, const void* gate, const void* up, int64_t rows, const float* x, int n_x,
                  float* y, void* stream, const void* q8) {
    if (n_x <= 0 || n_x > kMatvecRows || !supports(type)) return false;
    Segments seg{};
    seg.n = 1;
    seg.weight[0] = static_cast<const uint8_t*>(gate);
    seg.weight[1] = static_cast<const uint8_t*>(up);
    seg.y[0] = y;
    seg.end[0] = rows;
    return run_matvec(type, seg, true, cols, x, n_x, q8, static_cast<cudaStream_t>(stream));
}

bool dequantize_f16(DType type, const void* weight, int64_t first, int64_t rows, int64_t cols, uint16_t* out,
                    void* stream) {
    if (!supports(type)) return false;
    return with_units<DequantizeF16>(type, static_cast<const uint8_t*>(weight), row_bytes(type, cols), first, rows,
                                     int(cols / 32), reinterpret_cast<__half*>(out), static_cast<cudaStream_t>(stream));
}

bool get_rows(DType type, const void* weight, int64_t cols, const int32_t* ids, int n, float* out, void* stream) {
    if (!supports(type)) return false;
    return with_units<GetRows>(type, static_cast<const uint8_t*>(weight), row_bytes(type, cols), int(cols / 32), ids, n,
                               out, static_cast<cudaStream_t>(stream));
}

} // namespace arbor::cuda
