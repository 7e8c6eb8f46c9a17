// The CUDA backend: the batched forward pass of llama-family models on one NVIDIA GPU.
// Weights are uploaded once in their GGUF types; KV pages (F16) live in device memory.
// Steps of up to kMatvecRows rows multiply the quantized weights directly (one read of
// each weight per step; for the types with an integer path, with activations quantized
// to int8 once per input); larger steps dequantize each matrix to halves in chunks and
// multiply with cuBLAS on the tensor cores. Logits of the rows that sample come back to
// the host. Built into libarbor_cuda.so, which backend_factory.cpp loads at run time.
#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/kernels/cuda_kernels.h"
#include "arbor/model.h"
#include "cuda_memory.h"
#include "step_profile.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <unordered_map>

namespace arbor {
namespace {

// Halves of dequantized weight rows one cuBLAS product takes at most (a larger matrix,
// such as a big vocabulary's output projection, is multiplied in chunks of rows).
constexpr int64_t kDequantElems = int64_t(64) << 20;

struct DeviceMatrix {
    DType type = DType::F32;
    int64_t rows = 0, cols = 0;
    const void* data = nullptr;
};

struct DeviceLayer {
    const float *attn_norm = nullptr, *ffn_norm = nullptr, *bq = nullptr, *bk = nullptr, *bv = nullptr;
    DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

class CudaBackend final : public Backend {
public:
    CudaBackend(const Model& model, const BackendOptions& options, int device);
    ~CudaBackend() override;

    std::string name() const override { return "cuda"; }
    std::string description() const override { return description_; }
    int32_t page_size() const override { return kv_.page_size; }
    int32_t page_count() const override { return kv_.pages; }
    size_t page_bytes() const override {
        return size_t(cfg_.n_layer) * 2 * size_t(kv_.page_size) * size_t(kv_.slot_elems()) * sizeof(uint16_t);
    }
    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
    void copy_page_prefix(int32_t src, int32_t dst, int32_t n_positions) override;

private:
    DeviceMatrix upload(const TensorView& t);
    const float* upload(const std::vector<float>& v);
    void reserve(int64_t rows, int64_t logit_rows);
    // y (n_x rows of m.rows, row stride ldy) = x (n_x rows of m.cols) times m's rows.
    void product(const DeviceMatrix& m, const float* x, int n_x, float* y, const float* bias = nullptr,
                 const void* xq = nullptr);
    // Where an input of `rows` rows goes quantized for the integer decode products: the
    // buffer when the rows fit them and one of the matrices using it takes them, else
    // null (the float path). Each quantized input is used up by the products right after
    // it (stream order), so one buffer serves them all.
    void* q8_for(int rows, std::initializer_list<const DeviceMatrix*> users);
    // x (rows of cols) quantized into q8_for's buffer, or null.
    const void* quantized(const float* x, int rows, int64_t cols, std::initializer_list<const DeviceMatrix*> users);
    void upload_step(const ForwardBatch& batch, std::vector<int32_t>& out_rows);
    void enqueue(int rows, int n_out);
    void launch_graph(int rows, int n_out);
    void drop_graphs();

    const Model& model_;
    const ModelConfig& cfg_;
    int device_ = 0;
    std::string description_;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    DeviceArena weights_;
    std::unordered_map<const uint8_t*, DeviceMatrix> uploaded_;  // by host data: tied output shares token_embd
    DeviceMatrix token_embd_, output_;
    std::vector<DeviceLayer> layers_;
    const float* output_norm_ = nullptr;
    const float* inv_freq_ = nullptr;
    DeviceBuffer kv_storage_;
    cuda::KvLayout kv_;
    // Per step, grown on demand: activations (rows x width), the halves cuBLAS reads, the
    // step's index tables and attention's partials.
    int64_t capacity_rows_ = 0, capacity_logits_ = 0;
    DeviceBuffer x_, xn_, q_, k_, v_, att_, tmp_, gate_, up_, logits_, halves_x_, halves_w_;
    DeviceBuffer step_ints_, partial_out_, partial_stats_, q8_;
    size_t step_ints_capacity_ = 0, partials_capacity_ = 0;
    PinnedBuffer host_ints_;
    cuda::RowTables rows_{};
    const cuda::AttentionPart* parts_ = nullptr;
    const cuda::AttentionMerge* merges_ = nullptr;
    const int32_t* token_ids_ = nullptr;
    const int32_t* out_rows_ = nullptr;
    int n_parts_ = 0, n_merges_ = 0;
    // Captured decode steps by (rows, logit rows, attention parts, merges); a buffer that
    // grows bumps buffers_generation_, which invalidates them.
    bool graphs_enabled_ = true;
    bool int8_matvec_ = false;
    bool overlap_decode_ = false;
    std::map<std::array<int, 4>, cudaGraphExec_t> graphs_;
    uint64_t buffers_generation_ = 0, graphs_generation_ = 0;
    StepProfile profile_;
};

void check_cublas(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw Error(std::string("cuBLAS ") + what + " failed (status " + std::to_string(int(status)) + ")");
}

CudaBackend::CudaBackend(const Model& model, const BackendOptions& options, int device)
    : model_(model), cfg_(model.config()), device_(device) {
    if (cfg_.rope_long_orig_ctx > 0) throw Error("the CUDA backend does not apply LongRoPE's factors (run on the CPU)");
    // Its kernels compute the llama and qwen2 forward pass only (no Q/K norms, post-norms,
    // GELU, sliding windows or routed experts): other architectures run on the CPU backend.
    if (cfg_.architecture != "llama" && cfg_.architecture != "qwen2")
        throw Error("the CUDA backend does not run the '" + cfg_.architecture + "' architecture (only llama and qwen2)");
    // Its RoPE kernel takes the frequencies (YaRN's ramp included) but not a factor on cos/sin.
    if (model.rope_mscale() != 1.0f)
        throw Error("the CUDA backend does not scale RoPE's cos/sin (YaRN or rope.scaling.attn_factor)");
    if (std::string refusal = cuda_kv_type_refusal(options.kv_type); !refusal.empty()) throw Error(refusal);
    check_cuda(cudaSetDevice(device), "selecting the device");
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, device), "reading the device's properties");
    if (cfg_.head_dim % 8 != 0 || cfg_.head_dim > 256 || cfg_.n_head % cfg_.n_head_kv != 0 ||
        cfg_.n_head / cfg_.n_head_kv > 16)
        throw Error("the CUDA backend does not support this attention shape (head size " +
                    std::to_string(cfg_.head_dim) + ", " + std::to_string(cfg_.n_head) + " query heads over " +
                    std::to_string(cfg_.n_head_kv) + " KV heads)");
    if (options.page_size <= 0) throw Error("KV page size must be positive");
    const ModelWeights& w = model.weights();
    for (const auto& lw : w.layers)
        for (const TensorView* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
            if (!cuda::supports(t->type))
                throw Error("the CUDA backend has no kernels for " + std::string(dtype_name(t->type)) + " weights");
    for (const TensorView* t : {&w.token_embd, &w.output})
        if (!cuda::supports(t->type))
            throw Error("the CUDA backend has no kernels for " + std::string(dtype_name(t->type)) + " weights");

    // The KV pool's pages, then room for the weights, checked before anything is allocated.
    kv_.page_size = options.page_size;
    kv_.n_kv_heads = cfg_.n_head_kv;
    kv_.head_dim = cfg_.head_dim;
    const size_t per_page = page_bytes();
    const size_t pages = options.kv_tokens > 0
                             ? (size_t(options.kv_tokens) + size_t(kv_.page_size) - 1) / size_t(kv_.page_size)
                             : options.kv_budget_bytes / per_page;
    if (pages < 1) throw Error("KV memory budget holds no page (one page needs " + std::to_string(per_page) + " bytes)");
    kv_.pages = int32_t(std::min<size_t>(pages, size_t(1) << 30));
    size_t weight_bytes = 0;
    std::unordered_map<const uint8_t*, bool> counted;
    auto count = [&](const TensorView& t) {
        if (!counted.emplace(t.data, true).second) return;
        weight_bytes += size_t(t.rows) * row_bytes(t.type, t.cols) + 256;
    };
    count(w.token_embd);
    count(w.output);
    for (const auto& lw : w.layers)
        for (const TensorView* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) count(*t);
    const size_t kv_bytes = size_t(kv_.pages) * per_page;
    const size_t scratch = size_t(kDequantElems) * 2 + (size_t(256) << 20);
    size_t free_bytes = 0, total_bytes = 0;
    check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "reading the device's free memory");
    if (weight_bytes + kv_bytes + scratch > free_bytes)
        throw Error("not enough GPU memory on " + std::string(prop.name) + ": the weights need " +
                    std::to_string(weight_bytes >> 20) + " MiB and the KV cache " + std::to_string(kv_bytes >> 20) +
                    " MiB (plus " + std::to_string(scratch >> 20) + " MiB of work space), " +
                    std::to_string(free_bytes >> 20) + " MiB are free");

    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream");
    // ARBOR_CUDA_GRAPHS=0 launches decode steps kernel by kernel (for comparisons).
    if (const char* g = std::getenv("ARBOR_CUDA_GRAPHS"); g && std::string(g) == "0") graphs_enabled_ = false;
    // Int8 decode products only when asked for, as on the CPU: they move the logits by up to
    // ~0.1 on a trained model and flip greedy tokens at near-ties (Numerics in the README).
    int8_matvec_ = options.int8_activations;
    // Their decode steps let kernels overlap (ARBOR_CUDA_PDL=0: never, for comparisons).
    const char* pdl = std::getenv("ARBOR_CUDA_PDL");
    overlap_decode_ = int8_matvec_ && !(pdl && std::string(pdl) == "0");
    check_cublas(cublasCreate(&cublas_), "initialisation");
    check_cublas(cublasSetStream(cublas_, stream_), "stream selection");

    weights_.reserve(weight_bytes + size_t(cfg_.n_layer + 2) * (5 * size_t(cfg_.n_embd) + 3 * size_t(cfg_.n_ff)) *
                                        sizeof(float) + (size_t(64) << 10) * size_t(cfg_.n_layer + 2));
    token_embd_ = upload(w.token_embd);
    output_ = upload(w.output);
    output_norm_ = upload(w.output_norm);
    std::vector<float> inv_freq = model.rope_inv_freq();
    inv_freq_ = upload(inv_freq);
    for (const auto& lw : w.layers) {
        DeviceLayer d;
        d.attn_norm = upload(lw.attn_norm);
        d.ffn_norm = upload(lw.ffn_norm);
        d.bq = lw.bq.empty() ? nullptr : upload(lw.bq);
        d.bk = lw.bk.empty() ? nullptr : upload(lw.bk);
        d.bv = lw.bv.empty() ? nullptr : upload(lw.bv);
        d.wq = upload(lw.wq), d.wk = upload(lw.wk), d.wv = upload(lw.wv), d.wo = upload(lw.wo);
        d.w_gate = upload(lw.w_gate), d.w_up = upload(lw.w_up), d.w_down = upload(lw.w_down);
        layers_.push_back(d);
    }
    kv_storage_.resize(kv_bytes);
    kv_.k = static_cast<uint16_t*>(kv_storage_.get());
    kv_.v = kv_.k + size_t(cfg_.n_layer) * size_t(kv_.layer_elems());
    halves_w_.resize(size_t(kDequantElems) * sizeof(uint16_t));
    q8_.resize(cuda::q8_bytes(std::max({int64_t(cfg_.n_embd), int64_t(cfg_.n_head) * cfg_.head_dim, int64_t(cfg_.n_ff)}),
                              cuda::kMatvecRows));
    check_cuda(cudaStreamSynchronize(stream_), "uploading the weights");

    size_t free_after = 0;
    cudaMemGetInfo(&free_after, &total_bytes);
    char buf[256];
    std::snprintf(buf, sizeof buf, "CUDA: %s (%.1f GiB free)", prop.name, double(free_after) / double(1ull << 30));
    description_ = buf;
    spdlog::info("{}: weights {:.0f} MiB, KV {} pages of {} ({:.0f} MiB)", description_,
                 double(weights_.used()) / double(1 << 20), kv_.pages, kv_.page_size, double(kv_bytes) / double(1 << 20));
}

CudaBackend::~CudaBackend() {
    drop_graphs();
    if (cublas_) cublasDestroy(cublas_);
    if (stream_) cudaStreamDestroy(stream_);
}

DeviceMatrix CudaBackend::upload(const TensorView& t) {
    if (auto it = uploaded_.find(t.data); it != uploaded_.end()) return it->second;
    const size_t rb = row_bytes(t.type, t.cols);
    void* to = weights_.take(size_t(t.rows) * rb);
    if (t.row_stride == rb) {
        check_cuda(cudaMemcpyAsync(to, t.data, size_t(t.rows) * rb, cudaMemcpyHostToDevice, stream_), "uploading weights");
    } else {
        check_cuda(cudaMemcpy2DAsync(to, rb, t.data, t.row_stride, rb, size_t(t.rows), cudaMemcpyHostToDevice, stream_),
                   "uploading weights");
    }
    const DeviceMatrix m{t.type, t.rows, t.cols, to};
    uploaded_.emplace(t.data, m);
    return m;
}

const float* CudaBackend::upload(const std::vector<float>& v) {
    void* to = weights_.take(v.size() * sizeof(float));
    check_cuda(cudaMemcpy(to, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice), "uploading weights");
    return static_cast<const float*>(to);
}

void CudaBackend::reserve(int64_t rows, int64_t logit_rows) {
    if (rows > capacity_rows_) {
        const size_t r = size_t(std::max<int64_t>(rows, 2 * capacity_rows_));
        const size_t E = size_t(cfg_.n_embd), QD = size_t(cfg_.n_head) * size_t(cfg_.head_dim);
        const size_t KV = size_t(cfg_.kv_dim()), FF = size_t(cfg_.n_ff);
        x_.resize(r * E * 4), xn_.resize(r * std::max(E, QD) * 4), tmp_.resize(r * E * 4);
        q_.resize(r * QD * 4), att_.resize(r * QD * 4), k_.resize(r * KV * 4), v_.resize(r * KV * 4);
        gate_.resize(r * FF * 4), up_.resize(r * FF * 4);
        halves_x_.resize(r * std::max({E, QD, FF}) * 2);
        capacity_rows_ = int64_t(r);
        ++buffers_generation_;
    }
    if (logit_rows > capacity_logits_) {
        capacity_logits_ = std::max<int64_t>(logit_rows, 2 * capacity_logits_);
        logits_.resize(size_t(capacity_logits_) * size_t(cfg_.n_vocab) * 4);
        ++buffers_generation_;
    }
}

void* CudaBackend::q8_for(int rows, std::initializer_list<const DeviceMatrix*> users) {
    if (!int8_matvec_ || rows > cuda::kMatvecRows) return nullptr;
    if (std::none_of(users.begin(), users.end(), [](const DeviceMatrix* m) { return cuda::has_int8_path(m->type); }))
        return nullptr;
    return q8_.get();
}

const void* CudaBackend::quantized(const float* x, int rows, int64_t cols,
                                   std::initializer_list<const DeviceMatrix*> users) {
    void* q8 = q8_for(rows, users);
    if (q8) cuda::quantize_q8(x, cols, rows, q8, stream_);
    return q8;
}

void CudaBackend::product(const DeviceMatrix& m, const float* x, int n_x, float* y, const float* bias,
                          const void* xq) {
    if (n_x <= 0) return;
    if (n_x <= cuda::kMatvecRows) {
        cuda::matvec(m.type, m.data, m.rows, m.cols, x, n_x, y, bias, stream_, xq);
        return;
    }
    auto* xh = static_cast<uint16_t*>(halves_x_.get());
    auto* wh = static_cast<uint16_t*>(halves_w_.get());
    cuda::to_half(x, xh, int64_t(n_x) * m.cols, stream_);
    const int64_t chunk = std::max<int64_t>(1, kDequantElems / m.cols);
    const float one = 1.0f, zero = 0.0f;
    for (int64_t first = 0; first < m.rows; first += chunk) {
        const int64_t n = std::min(chunk, m.rows - first);
        cuda::dequantize_f16(m.type, m.data, first, n, m.cols, wh, stream_);
        // Column-major view: y^T (n x n_x, ld m.rows) = W_chunk (cols x n)^T * x^T (cols x n_x).
        check_cublas(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, int(n), n_x, int(m.cols), &one, wh, CUDA_R_16F,
                                  int(m.cols), xh, CUDA_R_16F, int(m.cols), &zero, y + first, CUDA_R_32F, int(m.rows),
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "matrix product");
    }
    if (bias) cuda::add_bias(y, m.rows, bias, n_x, m.rows, stream_);
}

// One upload of the step's integers: token ids, positions, block tables, attention
// parts and merges, output rows (each array's offset rounded up to 16 bytes).
void CudaBackend::upload_step(const ForwardBatch& batch, std::vector<int32_t>& out_rows) {
    const int32_t rows = int32_t(batch.tokens.size());
    std::vector<int32_t> pos(static_cast<size_t>(rows)), table(static_cast<size_t>(rows)), tables;
    std::vector<cuda::AttentionPart> parts;
    std::vector<cuda::AttentionMerge> merges;
    int32_t partials = 0;
    for (const auto& s : batch.sequences) {
        const int32_t at = int32_t(tables.size());
        tables.insert(tables.end(), s.block_table.begin(), s.block_table.end());
        for (int32_t i = 0; i < s.n_rows; ++i) {
            const int32_t t = s.first_row + i, p = s.start_pos + i;
            pos[size_t(t)] = p;
            table[size_t(t)] = at;
            cuda::plan_attention_row(t, p, parts, merges, partials);
        }
        if (s.logits == SequenceRows::Logits::All)
            for (int32_t i = 0; i < s.n_rows; ++i) out_rows.push_back(s.first_row + i);
        else if (s.logits == SequenceRows::Logits::Last)
            out_rows.push_back(s.first_row + s.n_rows - 1);
    }
    std::vector<int32_t> ints;
    auto append = [&](const void* data, size_t bytes) {
        const size_t at = ints.size();
        ints.resize(at + (bytes / 4 + 3) / 4 * 4);
        if (bytes) std::memcpy(ints.data() + at, data, bytes);
        return at;
    };
    // The block tables last: every other offset then depends only on the counts that
    // key a captured graph (launch_graph).
    const size_t o_tok = append(batch.tokens.data(), batch.tokens.size() * 4);
    const size_t o_pos = append(pos.data(), pos.size() * 4);
    const size_t o_table = append(table.data(), table.size() * 4);
    const size_t o_parts = append(parts.data(), parts.size() * sizeof(cuda::AttentionPart));
    const size_t o_merges = append(merges.data(), merges.size() * sizeof(cuda::AttentionMerge));
    const size_t o_out = append(out_rows.data(), out_rows.size() * 4);
    const size_t o_tables = append(tables.data(), tables.size() * 4);
    const size_t bytes = ints.size() * 4;
    if (bytes > step_ints_capacity_) {
        step_ints_capacity_ = std::max(bytes, 2 * step_ints_capacity_);
        step_ints_.resize(step_ints_capacity_);
        host_ints_.resize(step_ints_capacity_);
        ++buffers_generation_;
    }
    // The previous step's copy from the pinned buffer has finished: forward ends in a sync.
    std::memcpy(host_ints_.get(), ints.data(), bytes);
    check_cuda(cudaMemcpyAsync(step_ints_.get(), host_ints_.get(), bytes, cudaMemcpyHostToDevice, stream_),
               "uploading the step");
    const auto* base = static_cast<const int32_t*>(step_ints_.get());
    token_ids_ = base + o_tok;
    rows_ = {base + o_pos, base + o_table, base + o_tables};
    parts_ = reinterpret_cast<const cuda::AttentionPart*>(base + o_parts);
    merges_ = reinterpret_cast<const cuda::AttentionMerge*>(base + o_merges);
    out_rows_ = base + o_out;
    n_parts_ = int(parts.size());
    n_merges_ = int(merges.size());
    const size_t partial_floats = size_t(partials) * size_t(cfg_.n_head) * size_t(cfg_.head_dim);
    if (partial_floats > partials_capacity_) {
        partials_capacity_ = std::max(partial_floats, 2 * partials_capacity_);
        partial_out_.resize(partials_capacity_ * 4);
        partial_stats_.resize(partials_capacity_ / size_t(cfg_.head_dim) * 2 * 4 + 8);
        ++buffers_generation_;
    }
}

// The step's kernels, from the embedding lookup to the logits, on stream_.
void CudaBackend::enqueue(int rows, int n_out) {
    const int64_t E = cfg_.n_embd, FF = cfg_.n_ff;
    const float eps = cfg_.rms_eps;
    auto f = [](DeviceBuffer& b) { return static_cast<float*>(b.get()); };
    float *x = f(x_), *xn = f(xn_), *q = f(q_), *k = f(k_), *v = f(v_), *att = f(att_), *tmp = f(tmp_);
    float *gate = f(gate_), *up = f(up_);

    cuda::get_rows(token_embd_.type, token_embd_.data, E, token_ids_, rows, x, stream_);
    // The norms write their output quantized too where the products after them take it.
    const auto qkv_q8 = [&](const DeviceLayer& lw) { return q8_for(rows, {&lw.wq, &lw.wk, &lw.wv}); };
    void* xq = qkv_q8(layers_[0]);
    cuda::rms_norm(x, nullptr, layers_[0].attn_norm, xn, rows, E, eps, stream_, xq);
    profile_.mark("embed");
    for (int l = 0; l < cfg_.n_layer; ++l) {
        const DeviceLayer& lw = layers_[size_t(l)];
        if (rows <= cuda::kMatvecRows && lw.wq.type == lw.wk.type && lw.wk.type == lw.wv.type) {
            const cuda::MatvecOut qkv[] = {{lw.wq.data, lw.wq.rows, q, lw.bq}, {lw.wk.data, lw.wk.rows, k, lw.bk},
                                           {lw.wv.data, lw.wv.rows, v, lw.bv}};
            cuda::matvec_multi(lw.wq.type, lw.wq.cols, qkv, 3, xn, rows, stream_, xq);
        } else {
            product(lw.wq, xn, rows, q, lw.bq, xq);
            product(lw.wk, xn, rows, k, lw.bk, xq);
            product(lw.wv, xn, rows, v, lw.bv, xq);
        }
        profile_.mark("qkv");
        cuda::rope_store_kv(q, k, v, rows, cfg_.n_head, inv_freq_, cfg_.rope_neox, rows_, kv_, l, stream_);
        profile_.mark("rope+store");
        cuda::attention(q, att, cfg_.n_head, parts_, n_parts_, rows_, kv_, l, f(partial_out_), f(partial_stats_),
                        stream_);
        cuda::merge_attention(merges_, n_merges_, cfg_.n_head, cfg_.head_dim, f(partial_out_), f(partial_stats_), att,
                              stream_);
        profile_.mark("attention");
        product(lw.wo, att, rows, tmp, nullptr, quantized(att, rows, lw.wo.cols, {&lw.wo}));
        profile_.mark("wo");
        void* fq = q8_for(rows, {&lw.w_gate, &lw.w_up});
        cuda::add_rms_norm(x, tmp, lw.ffn_norm, xn, rows, E, eps, stream_, fq);
        profile_.mark("add+norm");
        if (rows <= cuda::kMatvecRows && lw.w_gate.type == lw.w_up.type) {
            cuda::matvec_gated(lw.w_gate.type, lw.w_gate.cols, lw.w_gate.data, lw.w_up.data, FF, xn, rows, gate, stream_,
                               fq);
        } else {
            product(lw.w_gate, xn, rows, gate, nullptr, fq);
            product(lw.w_up, xn, rows, up, nullptr, fq);
            cuda::silu_mul(gate, up, int64_t(rows) * FF, stream_);
        }
        profile_.mark("gate+up");
        product(lw.w_down, gate, rows, tmp, nullptr, quantized(gate, rows, FF, {&lw.w_down}));
        profile_.mark("down");
        const bool last = l + 1 == cfg_.n_layer;
        xq = last ? nullptr : qkv_q8(layers_[size_t(l + 1)]);
        cuda::add_rms_norm(x, tmp, last ? nullptr : layers_[size_t(l + 1)].attn_norm, xn, rows, E, eps, stream_, xq);
        profile_.mark("add+norm");
    }
    if (n_out > 0) {
        void* oq = q8_for(int(n_out), {&output_});
        cuda::rms_norm(x, out_rows_, output_norm_, xn, n_out, E, eps, stream_, oq);
        product(output_, xn, n_out, f(logits_), nullptr, oq);
        profile_.mark("logits");
    }
}

// Decode steps replay a captured graph of enqueue: a step of a few rows is hundreds of
// short kernels, and launching them one by one costs more than running them. A graph
// holds the step's pointers and launch sizes, so it is keyed by the counts that set
// them, and all are dropped when a buffer moves.
void CudaBackend::launch_graph(int rows, int n_out) {
    if (graphs_generation_ != buffers_generation_) {
        drop_graphs();
        graphs_generation_ = buffers_generation_;
    }
    const std::array<int, 4> key{rows, n_out, n_parts_, n_merges_};
    auto it = graphs_.find(key);
    if (it == graphs_.end()) {
        if (graphs_.size() >= 64) drop_graphs();
        cudaGraph_t graph = nullptr;
        check_cuda(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "capturing a step");
        try {
            enqueue(rows, n_out);
        } catch (...) {
            cudaStreamEndCapture(stream_, &graph);
            if (graph) cudaGraphDestroy(graph);
            throw;
        }
        check_cuda(cudaStreamEndCapture(stream_, &graph), "capturing a step");
        cudaGraphExec_t exec = nullptr;
        const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        check_cuda(err, "instantiating a step's graph");
        it = graphs_.emplace(key, exec).first;
    }
    check_cuda(cudaGraphLaunch(it->second, stream_), "launching a step's graph");
}

void CudaBackend::drop_graphs() {
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    graphs_.clear();
}

void CudaBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
    validate_batch(batch, kv_.page_size, kv_.pages, cfg_.n_vocab);
    check_cuda(cudaSetDevice(device_), "selecting the device");
    const int rows = int(batch.tokens.size());
    const int64_t n_out = batch.logit_rows();
    reserve(rows, n_out);
    std::vector<int32_t> out_rows;
    upload_step(batch, out_rows);
    profile_.begin_step(rows, stream_);
    {
        // Decode steps on the integer products let each kernel start while the one before
        // ends (measured faster there; the float products measured slower with it).
        const bool overlap = overlap_decode_ && rows <= cuda::kMatvecRows;
        struct Overlap {
            cudaStream_t s;
            ~Overlap() { cuda::set_overlapping_launches(s, false); }
        } restore{stream_};
        cuda::set_overlapping_launches(stream_, overlap);
        if (graphs_enabled_ && rows <= cuda::kMatvecRows && !profile_.staged_step()) launch_graph(rows, int(n_out));
        else enqueue(rows, int(n_out));
    }
    profile_.end_kernels();
    logits.resize(size_t(n_out) * size_t(cfg_.n_vocab));
    if (n_out > 0) {
        check_cuda(cudaMemcpyAsync(logits.data(), logits_.get(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream_),
                   "reading the logits");
    }
    check_cuda(cudaGetLastError(), "launching the step's kernels");
    check_cuda(cudaStreamSynchronize(stream_), "running the step");
    profile_.end_step();
}

void CudaBackend::copy_page_prefix(int32_t src, int32_t dst, int32_t n_positions) {
    if (src < 0 || dst < 0 || src >= kv_.pages || dst >= kv_.pages || n_positions < 0 || n_positions > kv_.page_size)
        throw Error("copy_page_prefix: page or position count out of range");
    const size_t bytes = size_t(n_positions) * size_t(kv_.slot_elems()) * sizeof(uint16_t);
    if (bytes == 0) return;
    for (int l = 0; l < cfg_.n_layer; ++l)
        for (uint16_t* base : {kv_.k, kv_.v}) {
            uint16_t* layer = base + size_t(l) * size_t(kv_.layer_elems());
            const size_t page_elems = size_t(kv_.page_size) * size_t(kv_.slot_elems());
            check_cuda(cudaMemcpyAsync(layer + size_t(dst) * page_elems, layer + size_t(src) * page_elems, bytes,
                                       cudaMemcpyDeviceToDevice, stream_),
                       "copying a page");
        }
    check_cuda(cudaStreamSynchronize(stream_), "copying a page");
}

} // namespace
} // namespace arbor

// The library's backend entry point (cuda_entry_points.h), looked up by cuda_library.cpp.
// Throws arbor::Error.
extern "C" __attribute__((visibility("default"))) arbor::Backend* arbor_create_cuda_backend(
    const arbor::Model* model, const arbor::BackendOptions* options, int device) {
    return new arbor::CudaBackend(*model, *options, device);
}
