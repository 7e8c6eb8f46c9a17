// The compute backend interface. A backend owns the model's weights in its memory
// (host or device), a pool of fixed-size KV pages, and runs one forward step over a
// batch that may mix several sequences: prefill chunks and single decode tokens.
// Page bookkeeping (which sequence owns which page) is the caller's; the backend only
// reads and writes the pages a batch names.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

class Model;
using TokenId = int32_t;

// The rows of one sequence in a batch: tokens at positions start_pos .. start_pos+n_rows-1.
// Their K/V are written into the sequence's pages before attention reads positions
// 0 .. start_pos+n_rows-1 through the block table (page p holds positions
// [p*page_size, (p+1)*page_size)).
struct SequenceRows {
    int32_t first_row = 0;       // index into ForwardBatch::tokens
    int32_t n_rows = 0;
    int32_t start_pos = 0;
    std::span<const int32_t> block_table;  // page ids covering every position read or written
    enum class Logits { None, Last, All } logits = Logits::Last;
};

struct ForwardBatch {
    std::vector<TokenId> tokens;
    std::vector<SequenceRows> sequences;

    int32_t logit_rows() const;  // rows of output in Backend::forward's logits
};

// Element type of the KV cache. F16 (as llama.cpp keeps it by default) halves the bytes
// attention reads per token and doubles the tokens a budget holds; F32 keeps K and V
// exactly as computed (the fidelity reference data was made with an F32 cache); Q8_0
// (GGUF's blocks of 32 int8 with a half-float scale) about halves F16's bytes again, at
// a small cost in fidelity (tests/model/test_q8_kv_fidelity.cpp). The CPU backend alone
// stores Q8_0 and F32 (the CUDA backend refuses both: cuda_kv_type_refusal).
enum class KvType { F16, F32, Q8_0 };

// "f16", "f32", "q8_0": as --kv-type spells them.
inline const char* kv_type_name(KvType type) {
    switch (type) {
    case KvType::F16: return "f16";
    case KvType::F32: return "f32";
    case KvType::Q8_0: return "q8_0";
    }
    return "?";
}
inline std::optional<KvType> kv_type_from_name(std::string_view name) {
    for (KvType t : {KvType::F16, KvType::F32, KvType::Q8_0})
        if (name == kv_type_name(t)) return t;
    return std::nullopt;
}

struct BackendOptions {
    int threads = 0;                  // 0: one per core
    size_t kv_budget_bytes = 512u << 20;
    int32_t kv_tokens = 0;            // when > 0: room for this many tokens instead of the budget
    // The longest sequence the caller runs (0: as many positions as the KV pool holds),
    // never more than the pool or the model's trained context (sequence_limit). A
    // LongRoPE model (phi3) rotates with its long factors when this limit exceeds its
    // original context, as llama.cpp chooses by its context size.
    int32_t context_tokens = 0;
    int32_t page_size = 16;           // tokens per KV page
    KvType kv_type = KvType::F16;
    // Float keeps logits a smooth function of the input (the default); Int8 quantizes
    // activations to 8 bits inside matrix products like llama.cpp (see matmul.h).
    bool int8_activations = false;
    // Quantized weights of the packable types (PanelWeights::packable) through copies
    // packed as panels of eight rows, multiplied with activations rounded to 16 bits per
    // block (8 with int8_activations) in integer arithmetic (panel_weights.h; the file's
    // pages of the packed matrices are released, so memory holds them once).
    // False keeps the GGUF order and the exact float products of float_dot.h.
    bool panel_weights = true;
    // Positions per attention task: a row that attends to more is split into parts of
    // this many, computed in parallel and merged (0: never split).
    int32_t attention_part = 256;
    // Where the forward pass runs: "cpu", "cuda" or "cuda:N" (device N), or "auto" (the
    // first CUDA device when its driver, the CUDA backend library and enough device memory
    // are there, else the CPU). See make_backend.
    std::string device = "cpu";
    // A CUDA device named in `device` that cannot be had runs the CPU backend instead,
    // with the reason, as "auto" does (the desktop app: a model that runs slowly beats
    // one that does not load). False: make_backend throws.
    bool cpu_fallback = false;
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // What runs it, for people: e.g. "CPU (AVX2, 2 threads)" or "CUDA: NVIDIA H100 (79.1 GiB free)".
    virtual std::string description() const { return name(); }
    virtual int32_t page_size() const = 0;
    virtual int32_t page_count() const = 0;
    virtual size_t page_bytes() const = 0;
    // Whether it rotates with a LongRoPE model's long factors (Model::rope_long_factors);
    // false for every other model. Keys are stored rotated, so K/V pages computed with
    // one factor set are not valid for the other.
    virtual bool rope_long_factors() const { return false; }

    // Runs the batch. logits receives logit_rows() x n_vocab floats, sequences in batch
    // order, rows in position order. Throws arbor::Error on an invalid batch.
    virtual void forward(const ForwardBatch& batch, std::vector<float>& logits) = 0;

    // Copies the K/V of the first n_positions slots of page src into page dst (all
    // layers): how a sequence takes over part of a cached page it cannot share.
    virtual void copy_page_prefix(int32_t src, int32_t dst, int32_t n_positions) = 0;

    // Page bytes, for the KV disk tier: a page's K/V of every layer as page_bytes()
    // bytes in the CPU backend's host layout (kv_pages.h: per layer, keys as columns, then
    // value rows), so that pages on disk are the same whatever backend wrote them. A
    // backend with pages in device memory copies device -> host here (and host -> device
    // in write_page); the engine calls both on its loop thread, between steps, for pages
    // no step of that moment reads or writes.
    // Empty when the backend can, else why not (the disk tier is then off).
    virtual std::string page_io_unsupported() const { return name() + " cannot read or write KV page bytes yet"; }
    virtual KvType kv_type() const { return KvType::F16; }
    // Both throw arbor::Error for a page out of range or a size other than page_bytes().
    virtual void read_page(int32_t page, std::span<std::byte> out) const;
    virtual void write_page(int32_t page, std::span<const std::byte> bytes);
};

// The longest sequence a pool of pool_positions positions runs for a model trained on
// n_ctx_train positions: context_tokens when > 0, bounded by both (Engine::context_size(),
// and the context by which LongRoPE's factors are chosen).
inline int32_t sequence_limit(int64_t pool_positions, int32_t context_tokens, int32_t n_ctx_train) {
    const int32_t trained = std::max(n_ctx_train, 1);
    return int32_t(std::min<int64_t>(pool_positions, context_tokens > 0 ? std::min(context_tokens, trained) : trained));
}

// The CPU backend: weights stay in the model's mapping, KV pages in host memory.
std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& options);

// The backend options.device names (backend_factory.cpp). The CUDA backend lives in a
// library of its own, loaded only here, so that binaries built with CUDA start on
// machines without its libraries. "cuda" that cannot be had throws arbor::Error with the
// reason (unless options.cpu_fallback); "auto" then falls back to the CPU and, when
// fallback is given, puts the reason there (empty when the GPU was taken or no CUDA was
// asked for). A name that is no device throws.
std::unique_ptr<Backend> make_backend(const Model& model, const BackendOptions& options,
                                      std::string* fallback = nullptr);

// Why `device` is no value of BackendOptions::device (auto, cpu, cuda, cuda:N), or "".
std::string device_name_problem(std::string_view device);

// Why the CUDA backend cannot keep a KV cache of `type` (its pages are F16 only), or ""
// for F16.
inline std::string cuda_kv_type_refusal(KvType type) {
    if (type == KvType::F16) return {};
    return std::string("the CUDA backend keeps its KV cache in F16 only, not ") + kv_type_name(type) +
           " (use KV type f16 for the GPU, or run on the CPU)";
}

// Throws arbor::Error when batch is not a valid step for a pool of page_count pages of
// page_size positions and a vocabulary of n_vocab (forward's precondition, one check for
// every backend).
void validate_batch(const ForwardBatch& batch, int32_t page_size, int32_t page_count, int32_t n_vocab);

} // namespace arbor
