// Paged causal attention for mixed prefill and decode rows in one launch. A block takes
// one part (up to kAttentionPart positions) of one row for the query heads of one KV
// head: their scores live in shared memory, so no score matrix ever reaches global
// memory. Rows longer than one part are split (as flash-decoding does) and merged by
// the parts' softmax statistics.
#include "arbor/kernels/cuda_kernels.h"
#include "dependent_launch.cuh"
#include "warp_reduce.cuh"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>

namespace arbor::cuda {
namespace {

// 256: a decode row's part is one block per KV head, so the block's threads are all the
// parallelism its values loop has (two or four slices of positions for heads of 128 or
// 64); shared memory stays under 48 KiB for 16 query heads of 256.
constexpr int kThreads = 256;

// G: query heads per KV head, at most MAXG (register arrays need a bound known at
// compile time). EARLY: launched to overlap the kernel before (dependent_launch.cuh).
template <int MAXG, bool EARLY>
__global__ void attention_kernel(const float* q, float* out, int n_head, const AttentionPart* parts, RowTables rt,
                                 KvLayout kv, int layer, float* partial_out, float* partial_stats) {
    if constexpr (EARLY) let_next_kernel_start();
    extern __shared__ float shared[];
    const int D = kv.head_dim, KV = kv.n_kv_heads, G = n_head / KV;
    const AttentionPart part = parts[blockIdx.x];
    const int kvh = blockIdx.y;
    const int first = part.part * kAttentionPart;
    const int count = min(kAttentionPart, rt.pos[part.row] + 1 - first);
    const int* table = rt.tables + rt.table[part.row];
    float* q_s = shared;                   // G x D, pre-scaled by 1 / sqrt(D)
    float* scores = q_s + MAXG * D;        // G x kAttentionPart
    float* max_s = scores + MAXG * kAttentionPart;
    float* sum_s = max_s + MAXG;
    float* partial_s = sum_s + MAXG;       // kThreads x MAXG: value sums of position slices
    auto* slot_s = reinterpret_cast<int64_t*>(partial_s + kThreads * MAXG);  // per position
    const auto load_q = [&] {
        const float scale = rsqrtf(float(D));
        const float* qrow = q + (int64_t(part.row) * n_head + int64_t(kvh) * G) * D;
        for (int i = threadIdx.x; i < G * D; i += kThreads) q_s[i] = qrow[i] * scale;
    };
    if constexpr (!EARLY) load_q();
    // Each position's element offset in the K and V planes, looked up once (the step's
    // parts and block tables are copied before any kernel runs: an early launch reads
    // them while the kernel before it ends, then waits for the queries).
    const int64_t layer_base = int64_t(layer) * kv.layer_elems() + int64_t(kvh) * D;
    for (int j = threadIdx.x; j < count; j += kThreads) {
        const int p = first + j;
        slot_s[j] = layer_base + (int64_t(table[p / kv.page_size]) * kv.page_size + p % kv.page_size) * kv.slot_elems();
    }
    if constexpr (EARLY) {
        wait_for_previous_kernel();
        load_q();
    }
    __syncthreads();

    // Scores: one position per thread, the key read in chunks of eight halves.
    for (int j = threadIdx.x; j < count; j += kThreads) {
        const uint4* key = reinterpret_cast<const uint4*>(kv.k + slot_s[j]);
        float acc[MAXG];
#pragma unroll
        for (int g = 0; g < MAXG; ++g) acc[g] = 0.0f;
#pragma unroll 8
        for (int c = 0; c < D / 8; ++c) {
            const uint4 w = key[c];
            const __half2* h = reinterpret_cast<const __half2*>(&w);
            float k8[8];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const float2 f = __half22float2(h[e]);
                k8[2 * e] = f.x, k8[2 * e + 1] = f.y;
            }
#pragma unroll
            for (int g = 0; g < MAXG; ++g) {
                if (g >= G) break;
                const float* qg = q_s + g * D + 8 * c;
#pragma unroll
                for (int e = 0; e < 8; ++e) acc[g] = fmaf(qg[e], k8[e], acc[g]);
            }
        }
#pragma unroll
        for (int g = 0; g < MAXG; ++g) {
            if (g >= G) break;
            scores[g * kAttentionPart + j] = acc[g];
        }
    }
    __syncthreads();

    // Softmax of each head over the part: a warp per head.
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int g = warp; g < G; g += kThreads / 32) {
        float* s = scores + g * kAttentionPart;
        float m = -INFINITY;
        for (int j = lane; j < count; j += 32) m = fmaxf(m, s[j]);
        m = warp_max(m);
        float l = 0.0f;
        for (int j = lane; j < count; j += 32) {
            const float p = __expf(s[j] - m);
            s[j] = p;
            l += p;
        }
        l = warp_sum(l);
        if (lane == 0) max_s[g] = m, sum_s[g] = l;
    }
    __syncthreads();

    // Values: a thread takes one element of the head for all heads of the group, over
    // every slices-th position (slices = kThreads / D threads share an element when the
    // head is short), several positions' loads in flight at once; slices are summed after.
    const bool split = part.partial >= 0;
    const __half* values = reinterpret_cast<const __half*>(kv.v);
    const int slices = D < kThreads ? kThreads / D : 1;
    for (int d0 = 0; d0 < D; d0 += kThreads) {
        const int d = d0 + threadIdx.x % min(D, kThreads), slice = threadIdx.x / min(D, kThreads);
        const bool active = slice < slices && d < D;
        float acc[MAXG];
#pragma unroll
        for (int g = 0; g < MAXG; ++g) acc[g] = 0.0f;
        if (active) {
#pragma unroll 16  // loads of 16 positions in flight: a decode row's part is one block's serial chain
            for (int j = slice; j < count; j += slices) {
                const float v = __half2float(values[slot_s[j] + d]);
#pragma unroll
                for (int g = 0; g < MAXG; ++g) {
                    if (g >= G) break;
                    acc[g] = fmaf(scores[g * kAttentionPart + j], v, acc[g]);
                }
            }
        }
        if (slices > 1) {
#pragma unroll
            for (int g = 0; g < MAXG; ++g) partial_s[threadIdx.x * MAXG + g] = acc[g];
            __syncthreads();
            if (slice == 0) {
                for (int k = 1; k < slices; ++k)
#pragma unroll
                    for (int g = 0; g < MAXG; ++g) acc[g] += partial_s[(threadIdx.x + k * D) * MAXG + g];
            }
        }
        if (active && slice == 0) {
#pragma unroll
            for (int g = 0; g < MAXG; ++g) {
                if (g >= G) break;
                const int head = kvh * G + g;
                const float o = acc[g] / sum_s[g];
                if (split) partial_out[(int64_t(part.partial) * n_head + head) * D + d] = o;
                else out[(int64_t(part.row) * n_head + head) * D + d] = o;
            }
        }
        __syncthreads();  // partial_s is reused by the next chunk of elements
    }
    if (split && threadIdx.x < G) {
        const int head = kvh * G + threadIdx.x;
        partial_stats[(int64_t(part.partial) * n_head + head) * 2] = max_s[threadIdx.x];
        partial_stats[(int64_t(part.partial) * n_head + head) * 2 + 1] = sum_s[threadIdx.x];
    }
}

template <bool EARLY>
__global__ void merge_kernel(const AttentionMerge* merges, int n_head, int D, const float* partial_out,
                             const float* partial_stats, float* out) {
    start_after_previous_kernel<EARLY>();
    const AttentionMerge m = merges[blockIdx.x];
    const int head = blockIdx.y;
    auto stat = [&](int p, int which) { return partial_stats[(int64_t(m.first + p) * n_head + head) * 2 + which]; };
    float max = -INFINITY;
    for (int p = 0; p < m.parts; ++p) max = fmaxf(max, stat(p, 0));
    float total = 0.0f;
    for (int p = 0; p < m.parts; ++p) total += stat(p, 1) * __expf(stat(p, 0) - max);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.0f;
        for (int p = 0; p < m.parts; ++p)
            o = fmaf(stat(p, 1) * __expf(stat(p, 0) - max) / total,
                     partial_out[(int64_t(m.first + p) * n_head + head) * D + d], o);
        out[(int64_t(m.row) * n_head + head) * D + d] = o;
    }
}

template <int MAXG>
void launch(const float* q, float* out, int n_head, const AttentionPart* parts, int n_parts, const RowTables& rt,
            const KvLayout& kv, int layer, float* partial_out, float* partial_stats, cudaStream_t s) {
    const size_t shared = sizeof(float) * (size_t(MAXG) * kv.head_dim + size_t(MAXG) * kAttentionPart + 2 * MAXG +
                                           size_t(kThreads) * MAXG) +
                          sizeof(int64_t) * kAttentionPart + 8;
    launch_kernel(attention_kernel<MAXG, true>, attention_kernel<MAXG, false>,
                  dim3(unsigned(n_parts), unsigned(kv.n_kv_heads)), kThreads, shared, s, q, out, n_head, parts, rt, kv,
                  layer, partial_out, partial_stats);
}

} // namespace

void attention(const float* q, float* out, int n_head, const AttentionPart* parts, int n_parts, const RowTables& rt,
               const KvLayout& kv, int layer, float* partial_out, float* partial_stats, void* stream) {
    if (n_parts <= 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    const int G = n_head / kv.n_kv_heads;
    if (G <= 4) launch<4>(q, out, n_head, parts, n_parts, rt, kv, layer, partial_out, partial_stats, s);
    else if (G <= 8) launch<8>(q, out, n_head, parts, n_parts, rt, kv, layer, partial_out, partial_stats, s);
    else launch<16>(q, out, n_head, parts, n_parts, rt, kv, layer, partial_out, partial_stats, s);
}

void merge_attention(const AttentionMerge* merges, int n_merges, int n_head, int head_dim, const float* partial_out,
                     const float* partial_stats, float* out, void* stream) {
    if (n_merges > 0)
        launch_kernel(merge_kernel<true>, merge_kernel<false>, dim3(unsigned(n_merges), unsigned(n_head)), 128, 0,
                      static_cast<cudaStream_t>(stream), merges, n_head, head_dim, partial_out, partial_stats, out);
}

} // namespace arbor::cuda
