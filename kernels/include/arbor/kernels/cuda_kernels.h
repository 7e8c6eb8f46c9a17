// CUDA kernels (built only when nvcc is available): host-callable launchers on device
// pointers, asynchronous on the given stream (a cudaStream_t passed as void*). The CUDA
// backend builds its forward pass from these; each has a scalar CPU reference that
// tests/cuda compares it with.
//
// Activations are row-major floats; a matrix of `type` is row-major in its GGUF block
// layout (row r at r * row_bytes(type, cols)), cols a multiple of 32 (of 256 for the
// k-quants).
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <string>
#include <vector>

// Helpers of the structs below are used by host code and by kernels.
#ifdef __CUDACC__
#define ARBOR_HOST_DEVICE __host__ __device__
#else
#define ARBOR_HOST_DEVICE
#endif

namespace arbor::cuda {

// Number of usable CUDA devices; 0 when there is no driver or device. why_not gets a
// human-readable reason in that case.
int device_count(std::string* why_not = nullptr);

// Whether the matrix kernels below take weights of this type.
bool supports(DType type);

// Kernels launched on `stream` from this thread may start while the one before them ends
// (programmatic dependent launch, where overlapping_launches_supported: devices of compute
// capability 9.0 and later) until this is called with false. The CUDA backend turns it on
// for the decode steps of the integer products, where it was measured faster (the float
// products measured slower with it), unless ARBOR_CUDA_PDL=0.
void set_overlapping_launches(void* stream, bool on);
bool overlapping_launches_supported();

// Most activation rows matvec takes in one call.
constexpr int kMatvecRows = 8;

// The integer path of the decode products, for the types where has_int8_path: the
// activation rows quantized once per input to int8 blocks of 32 with a float scale
// (kernels/cuda/q8_dot.h), then dp4a dot products with the weights' codes. Its result
// is the dot product of the weights with the quantized activations (each element within
// half a step, amax / 254, of the float's); the float path below stays for the other
// types and for callers that pass no quantized rows.
bool has_int8_path(DType type);
// Bytes of n_x quantized rows of cols.
size_t q8_bytes(int64_t cols, int n_x);
// Quantizes n_x rows of x (cols floats each, a multiple of 32) into q8 (q8_bytes).
void quantize_q8(const float* x, int64_t cols, int n_x, void* q8, void* stream);
// The integer path gives a weight row of at least this many 32-element units to two
// warps (each summing every other run of 32 units, their sums added in warp order), so
// that products of few weight rows or several activation rows fill the GPU: on an H100,
// eight activation rows took 21 instead of 31 us on a 4096 x 4096 Q4_K matrix and 52
// instead of 92 on 4096 x 14336; one row 9-10 and 18-21 us either way. Default 64 (rows
// of 2048 columns and more), or ARBOR_CUDA_Q8_SPLIT_UNITS. The order depends on the
// row's length alone, never on the batch.
void set_q8_split_units(int units);
int q8_split_units();

// y[t * rows + r] = dot(weight row r, x row t) (+ bias[r]) for t < n_x <= kMatvecRows,
// x rows of cols floats (16-byte aligned, cols a multiple of 32): each weight row is read
// once for all x rows (the float path: two rows a warp, lane l taking whole 32-element
// units l, l + 32, ...; the integer path: a row a warp, a lane per unit). Each (weight
// row, x row) sum is taken in the same order whatever n_x and whatever is launched with
// it, so a row's result never depends on its batch. q8: x quantized by quantize_q8, or null; the integer path runs when it
// is given and the type has one. Returns false for an unsupported type.
bool matvec(DType type, const void* weight, int64_t rows, int64_t cols, const float* x, int n_x, float* y,
            const float* bias, void* stream, const void* q8 = nullptr);

// Up to three matrices of one type and width in one launch (a layer's Q, K and V), each
// into its own output as matvec would.
struct MatvecOut {
    const void* weight;
    int64_t rows;
    float* y;
    const float* bias;  // may be null
};
bool matvec_multi(DType type, int64_t cols, const MatvecOut* outs, int n_outs, const float* x, int n_x,
                  void* stream, const void* q8 = nullptr);

// y = silu(gate . x) * (up . x), row by row (the FFN's gated activation fused into its
// products; the same bits as matvec of each followed by silu_mul).
bool matvec_gated(DType type, int64_t cols, const void* gate, const void* up, int64_t rows, const float* x, int n_x,
                  float* y, void* stream, const void* q8 = nullptr);

// Rows [first, first + rows) of a matrix as IEEE halves, row-major with cols per row:
// what cuBLAS multiplies for steps of many rows.
bool dequantize_f16(DType type, const void* weight, int64_t first, int64_t rows, int64_t cols, uint16_t* out,
                    void* stream);

// out[t] = row ids[t] of the matrix as floats (embedding lookup), t < n.
bool get_rows(DType type, const void* weight, int64_t cols, const int32_t* ids, int n, float* out, void* stream);

// x (n floats) as halves, rounded to nearest.
void to_half(const float* x, uint16_t* y, int64_t n, void* stream);

// y[t] += bias for each of `rows` rows of n (row stride ld).
void add_bias(float* y, int64_t ld, const float* bias, int rows, int64_t n, void* stream);

// y row t = x row src[t] / rms(x row src[t]) * w (src null: row t), n elements a row.
// q8 (optional, n a multiple of 32): also receives y quantized, as quantize_q8 would.
void rms_norm(const float* x, const int32_t* src, const float* w, float* y, int rows, int64_t n, float eps,
              void* stream, void* q8 = nullptr);

// x += add, then y = x / rms(x) * w, row by row (w null: only the addition); q8 as for
// rms_norm.
void add_rms_norm(float* x, const float* add, const float* w, float* y, int rows, int64_t n, float eps,
                  void* stream, void* q8 = nullptr);

// gate = silu(gate) * up over n elements.
void silu_mul(float* gate, const float* up, int64_t n, void* stream);

// Geometry of the paged KV cache on the device: for each layer, K and V hold
// pages x page_size slots, each slot n_kv_heads x head_dim halves.
struct KvLayout {
    uint16_t* k = nullptr;
    uint16_t* v = nullptr;
    int32_t pages = 0, page_size = 0, n_kv_heads = 0, head_dim = 0;
    ARBOR_HOST_DEVICE int64_t slot_elems() const { return int64_t(n_kv_heads) * head_dim; }
    ARBOR_HOST_DEVICE int64_t layer_elems() const { return int64_t(pages) * page_size * slot_elems(); }
};

// Per-row facts of a step, on the device: row t is at position pos[t] of a sequence
// whose block table starts at tables[table[t]].
struct RowTables {
    const int32_t* pos = nullptr;
    const int32_t* table = nullptr;
    const int32_t* tables = nullptr;
};

// Rotates each row's query and key heads by its position (angles pos * inv_freq[i] in
// double precision; neox rotates halves, else adjacent pairs) and stores the keys and
// values as halves in the row's slot of layer `layer`.
void rope_store_kv(float* q, const float* k, const float* v, int rows, int n_head, const float* inv_freq,
                   bool neox, const RowTables& rt, const KvLayout& kv, int layer, void* stream);

// Positions per attention part: a row attending to more is split into parts computed
// in parallel and merged by their softmax statistics.
constexpr int kAttentionPart = 128;

// One part of one row: positions [part * kAttentionPart, min(pos + 1, ...)), written to
// the row's output when it has one part, else to partial slot `partial`.
struct AttentionPart {
    int32_t row, part, partial;
};

// Causal attention of each listed part over the paged cache (online per part: scores
// in shared memory, never a score matrix in global memory). q rows hold n_head heads,
// out rows likewise. partial_out/partial_stats receive the parts of split rows
// (n_head * head_dim floats and n_head (max, sum) pairs per partial slot).
void attention(const float* q, float* out, int n_head, const AttentionPart* parts, int n_parts,
               const RowTables& rt, const KvLayout& kv, int layer, float* partial_out, float* partial_stats,
               void* stream);

// One split row: its partial slots first .. first + parts - 1.
struct AttentionMerge {
    int32_t row, first, parts;
};

// Plans row `row` at position pos: appends its parts, and its merge when it is split
// (taking partial slots from `partials` on).
inline void plan_attention_row(int32_t row, int32_t pos, std::vector<AttentionPart>& parts,
                               std::vector<AttentionMerge>& merges, int32_t& partials) {
    const int32_t n = pos / kAttentionPart + 1;
    if (n == 1) {
        parts.push_back({row, 0, -1});
        return;
    }
    merges.push_back({row, partials, n});
    for (int32_t k = 0; k < n; ++k) parts.push_back({row, k, partials + k});
    partials += n;
}

// Each split row's output as its parts weighted by their share of the softmax sum.
void merge_attention(const AttentionMerge* merges, int n_merges, int n_head, int head_dim,
                     const float* partial_out, const float* partial_stats, float* out, void* stream);

} // namespace arbor::cuda
