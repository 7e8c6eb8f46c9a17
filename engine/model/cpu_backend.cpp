// The CPU backend: a batched forward pass of llama-family models (llama, qwen2, qwen3,
// qwen3moe, gemma3, smollm3, phi3, mistral3, gpt-oss) over paged KV. forward() reads as the transformer it computes: embed the
// tokens; for each layer an attention block and an FFN block, each
//   xn = norm(x), x += [post_norm](branch(xn));
// then the final norm and the logits. Every matrix product covers all rows of the batch
// at once (each weight read once per step); attention (cpu_attention.h) reads K/V through
// each sequence's block table.
//
// Two fusions keep the passes over the rows few (each pass wakes the thread pool):
// - The norm that starts a block runs in the pass that ends the block before (the
//   residual add), except for layer 0's attention norm, which has a pass of its own.
// - A row-wise pass whose rows feed a product over panel weights also quantizes them
//   for it (PanelRows::Ready, "input quantized in the row pass"), instead of the product
//   quantizing them in a pass of its own: with eight chats that is a pool pass fewer
//   before three of a layer's four products (attention's output, computed in tasks, is
//   quantized by its product).
#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/gelu_tanh_mul.h"
#include "arbor/kernels/matmul.h"
#include "arbor/kernels/panel_weights.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/thread_pool.h"
#include "arbor/model.h"
#include "cpu_attention.h"
#include "cpu_experts.h"
#include "kv_pages.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace arbor {

namespace {

// Row-wise work below this many rows runs on the calling thread: waking the pool costs
// more than it saves; from eight rows (eight chats decoding) it pays (README.md, Numerics).
constexpr int64_t kParallelRows = 8;

class CpuBackend final : public Backend {
public:
    CpuBackend(const Model& model, const BackendOptions& options)
        : model_(model), cfg_(model.config()),
          pool_(options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
          kv_(cfg_, options), attention_(cfg_, kv_, pool_, options.attention_part),
          activations_(options.int8_activations ? Activations::Int8 : Activations::Float),
          experts_(cfg_, pool_, scratch_, activations_,
                   [this](const TensorView& w, float* y, int64_t ldy) { return product(w, y, ldy); }),
          long_rope_(model.rope_long_factors(
              sequence_limit(int64_t(kv_.page_count()) * kv_.page_size(), options.context_tokens, cfg_.n_ctx_train))) {
        if (activations_ == Activations::Int8) check_int8_types(options.panel_weights);
        if (options.panel_weights) pack_panels();
    }

    std::string name() const override { return "cpu"; }
    std::string description() const override {
        return "CPU (" + std::string(isa_name(best_isa())) + ", " + std::to_string(pool_.size()) + " threads" +
               (activations_ == Activations::Int8 ? ", int8 activations)" : ")");
    }
    int32_t page_size() const override { return kv_.page_size(); }
    int32_t page_count() const override { return kv_.page_count(); }
    size_t page_bytes() const override { return kv_.page_bytes(); }
    bool rope_long_factors() const override { return long_rope_; }

    void forward(const ForwardBatch& batch, std::vector<float>& logits) override;
    void copy_page_prefix(int32_t src, int32_t dst, int32_t n_positions) override {
        kv_.copy_prefix(src, dst, n_positions);
    }
    std::string page_io_unsupported() const override { return {}; }
    KvType kv_type() const override { return kv_.type(); }
    void read_page(int32_t page, std::span<std::byte> out) const override { kv_.read_page(page, out); }
    void write_page(int32_t page, std::span<const std::byte> bytes) override { kv_.write_page(page, bytes); }

private:
    void pack_panels();
    void check_int8_types(bool panels) const;

    // The stages of a step, in the order forward() runs them.
    void begin_step(const ForwardBatch& batch);
    void embed(const ForwardBatch& batch);
    void norm_rows(const std::vector<float>& norm, std::span<const MatmulOutput> next_product);
    void attention_block(const ForwardBatch& batch, int32_t layer);
    void position_and_store_kv(const ForwardBatch& batch, int32_t layer);
    void ffn_block(int32_t layer);
    void residual_then_norm(const std::vector<float>& post_norm, const std::vector<float>* next_norm,
                            std::span<const MatmulOutput> next_product);
    void output_logits(const ForwardBatch& batch, std::vector<float>& logits);

    // A product's output description, through the weight's panels when it has them.
    MatmulOutput product(const TensorView& w, float* y, int64_t ldy, const std::vector<float>& bias = {}) const {
        const auto it = panels_.find(w.data);
        return {w, y, ldy, bias.empty() ? nullptr : bias.data(), it == panels_.end() ? nullptr : &it->second};
    }
    std::array<MatmulOutput, 3> qkv_products(const LayerWeights& lw) {
        const int64_t QD = int64_t(cfg_.n_head) * cfg_.head_dim, KV = cfg_.kv_dim();
        return {product(lw.wq, q_.data(), QD, lw.bq), product(lw.wk, k_.data(), KV, lw.bk),
                product(lw.wv, v_.data(), KV, lw.bv)};
    }
    // The products that read the FFN block's normed input: the router in a layer of
    // experts, else gate and up.
    std::span<const MatmulOutput> ffn_input_products(const LayerWeights& lw) {
        if (cfg_.has_experts()) {
            ffn_inputs_[0] = product(lw.ffn_gate_inp, router_.data(), cfg_.n_expert, lw.ffn_gate_inp_b);
            return {ffn_inputs_.data(), 1};
        }
        ffn_inputs_ = {product(lw.w_gate, gate_.data(), cfg_.n_ff), product(lw.w_up, up_.data(), cfg_.n_ff)};
        return ffn_inputs_;
    }
    // Every matrix of a layer that a step may read.
    static std::vector<TensorView> layer_matrices(const LayerWeights& lw, const ModelConfig& cfg);
    // y = x . W for all rows of the step, then forgets input_quantized_ (it was for this product).
    void multiply(const float* x, std::span<const MatmulOutput> outputs);
    // Fusion: the row pass about to compute the rows (cols wide) that `outputs` read
    // quantizes each for their panels (input_row) when they use panel rows.
    void quantize_input_in_row_pass(std::span<const MatmulOutput> outputs, int64_t cols);
    // The row pass's hand-over of row t of the next product's input, once it is final.
    void input_row(int64_t t, const float* row) {
        if (input_quantized_) scratch_.panel_activations.quantize_row(t, row);
    }
    template <class F>
    void for_rows(F&& fn) {
        if (rows_ >= kParallelRows) pool_.parallel_for(rows_, [&](int64_t t, int) { fn(t); });
        else for (int64_t t = 0; t < rows_; ++t) fn(t);
    }

    const Model& model_;
    const ModelConfig& cfg_;
    ThreadPool pool_;
    KvPages kv_;
    CpuAttention attention_;
    MatmulScratch scratch_;
    Activations activations_;
    CpuExperts experts_;
    // LongRoPE's factor set, chosen once by the longest sequence this backend runs.
    const bool long_rope_;
    std::array<MatmulOutput, 2> ffn_inputs_;
    // Panel copies of the packable matrix weights, by the weight's data (the output
    // projection, when tied, shares token_embd's, and embedding lookups then read the
    // panels too).
    std::unordered_map<const uint8_t*, PanelWeights> panels_;
    // The step: its rows, each row's position and sequence.
    int64_t rows_ = 0;
    std::vector<int32_t> row_pos_, row_seq_;
    // Whether the next product's input rows were quantized by the row pass that computed them.
    bool input_quantized_ = false;
    // Activations of the current step, rows x width: the residual stream x, normed xn,
    // q/k/v, attention's output, a branch's output before its residual add, the FFN's gate
    // and up, and each row's RoPE table (rope_local_: the sliding-window layers').
    AlignedFloats x_, xn_, q_, k_, v_, att_, tmp_, gate_, up_, rope_;
    AlignedFloats rope_local_;
    AlignedFloats router_;  // a layer of experts' router logits, rows x n_expert
};

std::vector<TensorView> CpuBackend::layer_matrices(const LayerWeights& lw, const ModelConfig& cfg) {
    std::vector<TensorView> out = {lw.wq, lw.wk, lw.wv, lw.wo};
    if (!cfg.has_experts()) {
        out.insert(out.end(), {lw.w_gate, lw.w_up, lw.w_down});
        return out;
    }
    out.push_back(lw.ffn_gate_inp);
    // Each expert's own matrix: the products take one expert at a time and find its
    // panels by its first row.
    for (const TensorView* stack : {&lw.gate_exps, &lw.up_exps, &lw.down_exps})
        for (int32_t e = 0; e < cfg.n_expert; ++e) out.push_back(expert_rows(*stack, cfg.n_expert, e));
    return out;
}

// Refused at start rather than failing in the first step. Panels take 8-bit codes for
// every type they pack.
void CpuBackend::check_int8_types(bool panels) const {
    const ModelWeights& w = model_.weights();
    auto check = [panels](const TensorView& t) {
        if (!has_int8_dot(t.type) && !(panels && PanelWeights::packable(t.type, t.cols)))
            throw Error("int8 activations have no products for " + std::string(dtype_name(t.type)) +
                        " weights: run this model with float activations");
    };
    for (const auto& lw : w.layers)
        for (const TensorView& t : layer_matrices(lw, cfg_)) check(t);
    check(w.output);
}

void CpuBackend::pack_panels() {
    const auto start = std::chrono::steady_clock::now();
    const ModelWeights& w = model_.weights();
    std::vector<TensorView> matrices;
    for (const auto& lw : w.layers) {
        const std::vector<TensorView> layer = layer_matrices(lw, cfg_);
        matrices.insert(matrices.end(), layer.begin(), layer.end());
    }
    matrices.push_back(w.output);
    std::vector<const TensorView*> todo;
    std::unordered_set<const uint8_t*> seen;
    for (const TensorView& t : matrices)
        if (PanelWeights::packable(t.type, t.cols) && seen.insert(t.data).second) todo.push_back(&t);
    // All panels in one buffer of huge pages (huge_pages.h).
    std::vector<size_t> offsets;
    const std::shared_ptr<uint8_t[]> storage = PanelWeights::storage_for(todo, offsets);
    std::vector<std::optional<PanelWeights>> packed(todo.size());
    // Largest first: a matrix's file pages are resident while it packs, and packed last the
    // output projection (often the largest) set the peak, its pages beside nearly all the
    // panels (1B Q4_K_M: 695 MiB peak, 659 at the end).
    std::vector<size_t> order(todo.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return size_t(todo[a]->rows) * todo[a]->row_stride > size_t(todo[b]->rows) * todo[b]->row_stride;
    });
    pool_.parallel_for(int64_t(todo.size()), [&](int64_t k, int) {
        const size_t i = order[size_t(k)];
        if (offsets[i] == SIZE_MAX) return;
        try {
            packed[i] = PanelWeights::pack(*todo[i], storage, offsets[i]);
            // The panels replace the GGUF rows everywhere (products and embedding lookups),
            // so those pages need not stay resident beside the copy: released as each
            // matrix is packed, memory never holds both copies of the model (a 1B Q4_K_M
            // run peaked at 2.2 times the file when they went after the last one).
            model_.file().release_pages(todo[i]->data, size_t(todo[i]->rows) * todo[i]->row_stride);
        } catch (const std::invalid_argument& e) {
            // Scales no real model has: this matrix keeps the GGUF order (exact for any value).
            spdlog::warn("{}; that matrix stays in GGUF order", e.what());
        }
    });
    for (size_t i = 0; i < todo.size(); ++i) {
        if (!packed[i]) continue;
        panels_.emplace(todo[i]->data, std::move(*packed[i]));
        // Again: packing a neighbour may have faulted the edge of this one's range back in
        // (the kernel maps the pages around a fault too).
        model_.file().release_pages(todo[i]->data, size_t(todo[i]->rows) * todo[i]->row_stride);
    }
    size_t bytes = 0;
    for (const auto& [data, p] : panels_) bytes += p.panel_bytes() * size_t(p.panels());
    spdlog::info("packed {} weight matrices ({:.1f} MB) as panels in {:.0f} ms", panels_.size(), double(bytes) / 1e6,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

void CpuBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
    validate_batch(batch, kv_.page_size(), kv_.page_count(), cfg_.n_vocab);
    const std::vector<LayerWeights>& layers = model_.weights().layers;
    begin_step(batch);
    embed(batch);
    // Layer 0's attention norm; every later block's norm ends the block before it.
    norm_rows(layers[0].attn_norm, qkv_products(layers[0]));
    for (int32_t l = 0; l < cfg_.n_layer; ++l) {
        attention_block(batch, l);
        ffn_block(l);
    }
    output_logits(batch, logits);
}

// Each row's position and sequence, the activation buffers sized for the rows, and the
// attention plan (the same in every layer).
void CpuBackend::begin_step(const ForwardBatch& batch) {
    rows_ = int64_t(batch.tokens.size());
    const size_t r = size_t(rows_);
    const size_t q_dim = size_t(cfg_.n_head) * size_t(cfg_.head_dim);
    x_.resize(r * size_t(cfg_.n_embd));
    xn_.resize(r * std::max(size_t(cfg_.n_embd), q_dim));
    tmp_.resize(r * size_t(cfg_.n_embd));
    q_.resize(r * q_dim);
    att_.resize(r * q_dim);
    k_.resize(r * size_t(cfg_.kv_dim()));
    v_.resize(r * size_t(cfg_.kv_dim()));
    if (cfg_.has_experts()) {
        router_.resize(r * size_t(cfg_.n_expert));
    } else {
        gate_.resize(r * size_t(cfg_.n_ff));
        up_.resize(r * size_t(cfg_.n_ff));
    }
    rope_.resize(r * size_t(cfg_.head_dim));
    if (!cfg_.local_layers.empty()) rope_local_.resize(r * size_t(cfg_.head_dim));
    row_pos_.resize(r);
    row_seq_.resize(r);
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
        const auto& seq = batch.sequences[s];
        for (int32_t i = 0; i < seq.n_rows; ++i) {
            row_pos_[size_t(seq.first_row + i)] = seq.start_pos + i;
            row_seq_[size_t(seq.first_row + i)] = int32_t(s);
        }
    }
    attention_.plan(batch, row_pos_);
}

// x = each row's token embedding (times embd_scale); the same pass computes each row's
// RoPE tables, which every layer reads.
void CpuBackend::embed(const ForwardBatch& batch) {
    const int64_t E = cfg_.n_embd, D = cfg_.head_dim;
    const TensorView& token_embd = model_.weights().token_embd;
    const auto embd_panels = panels_.find(token_embd.data);
    for_rows([&](int64_t t) {
        const TokenId token = batch.tokens[size_t(t)];
        // Panels hold exactly the GGUF rows' values (PanelWeights::dequantize_row).
        if (embd_panels != panels_.end()) embd_panels->second.dequantize_row(token, &x_[size_t(t * E)]);
        else dequantize_row(token_embd.type, token_embd.row(token), &x_[size_t(t * E)], E);
        if (cfg_.embd_scale != 1.0f)
            for (float* x = &x_[size_t(t * E)]; x != &x_[size_t((t + 1) * E)]; ++x) *x *= cfg_.embd_scale;
        model_.rope_table(row_pos_[size_t(t)], &rope_[size_t(t * D)], false, long_rope_);
        if (!cfg_.local_layers.empty()) model_.rope_table(row_pos_[size_t(t)], &rope_local_[size_t(t * D)], true);
    });
}

// xn = norm(x), the rows quantized for next_product.
void CpuBackend::norm_rows(const std::vector<float>& norm, std::span<const MatmulOutput> next_product) {
    const int64_t E = cfg_.n_embd;
    quantize_input_in_row_pass(next_product, E);
    for_rows([&](int64_t t) {
        rms_norm(&x_[size_t(t * E)], norm.data(), &xn_[size_t(t * E)], E, cfg_.rms_eps);
        input_row(t, &xn_[size_t(t * E)]);
    });
}

// x += [attn_post_norm](attention(xn) . wo), then xn = ffn_norm(x) for the FFN block.
void CpuBackend::attention_block(const ForwardBatch& batch, int32_t layer) {
    const LayerWeights& lw = model_.weights().layers[size_t(layer)];
    multiply(xn_.data(), qkv_products(lw));
    position_and_store_kv(batch, layer);
    attention_.run(batch, layer, q_.data(), att_.data(), lw.attn_sinks);
    const MatmulOutput o[] = {product(lw.wo, tmp_.data(), cfg_.n_embd, lw.bo)};
    multiply(att_.data(), o);
    residual_then_norm(lw.attn_post_norm, &lw.ffn_norm, ffn_input_products(lw));
}

// Per-head RMSNorm of each row's query and key heads (qwen3, gemma3), RoPE at the row's
// position (not in smollm3's NoPE layers), mistral3's query temperature, and the row's K
// and V into its sequence's page.
void CpuBackend::position_and_store_kv(const ForwardBatch& batch, int32_t layer) {
    const LayerWeights& lw = model_.weights().layers[size_t(layer)];
    const int64_t D = cfg_.head_dim, QD = int64_t(cfg_.n_head) * D, KV = cfg_.kv_dim();
    const AlignedFloats& rope = cfg_.is_local(layer) ? rope_local_ : rope_;
    const bool rotate = cfg_.uses_rope(layer);
    for_rows([&](int64_t t) {
        const float* cs = &rope[size_t(t * D)];
        for (int32_t h = 0; h < cfg_.n_head; ++h) {
            float* q = &q_[size_t(t * QD + h * D)];
            if (!lw.attn_q_norm.empty()) rms_norm(q, lw.attn_q_norm.data(), q, D, cfg_.rms_eps);
            if (rotate) rope_apply(q, cs, cfg_.n_rot, cfg_.rope_neox);
        }
        if (cfg_.attn_temp_scale != 0.0f) {
            const float temperature = cfg_.query_temperature(row_pos_[size_t(t)]);
            for (float* q = &q_[size_t(t * QD)]; q != &q_[size_t((t + 1) * QD)]; ++q) *q *= temperature;
        }
        for (int32_t h = 0; h < cfg_.n_head_kv; ++h) {
            float* k = &k_[size_t(t * KV + h * D)];
            if (!lw.attn_k_norm.empty()) rms_norm(k, lw.attn_k_norm.data(), k, D, cfg_.rms_eps);
            if (rotate) rope_apply(k, cs, cfg_.n_rot, cfg_.rope_neox);
        }
        const auto& seq = batch.sequences[size_t(row_seq_[size_t(t)])];
        kv_.store(layer, seq.block_table, row_pos_[size_t(t)], &k_[size_t(t * KV)], &v_[size_t(t * KV)]);
    });
}

// x += [ffn_post_norm]((act(xn . w_gate) * (xn . w_up)) . w_down), or in a layer of
// experts x += the chosen experts' weighted sum (cpu_experts.h); then xn = the next
// layer's attention norm of x (none after the last layer).
void CpuBackend::ffn_block(int32_t layer) {
    const std::vector<LayerWeights>& layers = model_.weights().layers;
    const LayerWeights& lw = layers[size_t(layer)];
    const int64_t F = cfg_.n_ff;
    multiply(xn_.data(), ffn_input_products(lw));
    if (cfg_.has_experts()) {
        experts_.route(router_.data(), rows_);
        experts_.run(lw, xn_.data(), tmp_.data());
    } else {
        const MatmulOutput down[] = {product(lw.w_down, tmp_.data(), cfg_.n_embd)};
        quantize_input_in_row_pass(down, F);
        for_rows([&](int64_t t) {
            float* gate = &gate_[size_t(t * F)];
            if (cfg_.ffn_activation == ModelConfig::Activation::GeluTanh) gelu_tanh_mul(gate, &up_[size_t(t * F)], F);
            else silu_mul(gate, &up_[size_t(t * F)], F);
            input_row(t, gate);
        });
        multiply(gate_.data(), down);
    }
    if (layer + 1 < cfg_.n_layer) {
        const LayerWeights& next = layers[size_t(layer + 1)];
        residual_then_norm(lw.ffn_post_norm, &next.attn_norm, qkv_products(next));
    } else {
        residual_then_norm(lw.ffn_post_norm, nullptr, {});
    }
}

// The pass that ends a block: x += the branch's output in tmp_ (normed first where the
// layer has a post-norm), fused with the next block's norm xn = next_norm(x), its rows
// quantized for next_product.
void CpuBackend::residual_then_norm(const std::vector<float>& post_norm, const std::vector<float>* next_norm,
                                    std::span<const MatmulOutput> next_product) {
    const int64_t E = cfg_.n_embd;
    if (next_norm) quantize_input_in_row_pass(next_product, E);
    for_rows([&](int64_t t) {
        float* x = &x_[size_t(t * E)];
        float* add = &tmp_[size_t(t * E)];
        if (!post_norm.empty()) rms_norm(add, post_norm.data(), add, E, cfg_.rms_eps);
        for (int64_t i = 0; i < E; ++i) x[i] += add[i];
        if (next_norm) {
            rms_norm(x, next_norm->data(), &xn_[size_t(t * E)], E, cfg_.rms_eps);
            input_row(t, &xn_[size_t(t * E)]);
        }
    });
}

// Final norm and output projection (soft-capped where the model says), only for the rows
// whose logits are wanted.
void CpuBackend::output_logits(const ForwardBatch& batch, std::vector<float>& logits) {
    const int64_t E = cfg_.n_embd;
    const ModelWeights& w = model_.weights();
    std::vector<int64_t> out_rows;
    for (const auto& s : batch.sequences) {
        if (s.logits == SequenceRows::Logits::All)
            for (int32_t i = 0; i < s.n_rows; ++i) out_rows.push_back(s.first_row + i);
        else if (s.logits == SequenceRows::Logits::Last)
            out_rows.push_back(s.first_row + s.n_rows - 1);
    }
    const int64_t n_out = batch.logit_rows();
    logits.resize(size_t(n_out) * size_t(cfg_.n_vocab));
    if (n_out == 0) return;
    for (int64_t i = 0; i < n_out; ++i)
        rms_norm(&x_[size_t(out_rows[size_t(i)] * E)], w.output_norm.data(), &xn_[size_t(i * E)], E, cfg_.rms_eps);
    const MatmulOutput out[] = {product(w.output, logits.data(), cfg_.n_vocab)};
    matmul(pool_, xn_.data(), n_out, out, scratch_, activations_);
    if (const float cap = cfg_.final_logit_softcap; cap > 0.0f)
        for (float& z : logits) z = std::tanh(z * (1.0f / cap)) * cap;
}

void CpuBackend::multiply(const float* x, std::span<const MatmulOutput> outputs) {
    matmul(pool_, x, rows_, outputs, scratch_, activations_,
           input_quantized_ ? PanelRows::Ready : PanelRows::Quantize);
    input_quantized_ = false;
}

void CpuBackend::quantize_input_in_row_pass(std::span<const MatmulOutput> outputs, int64_t cols) {
    input_quantized_ = uses_panel_rows(outputs, activations_);
    if (input_quantized_) scratch_.panel_activations.resize(rows_, cols, panel_code_limit(activations_));
}

} // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& options) {
    return std::make_unique<CpuBackend>(model, options);
}

} // namespace arbor
