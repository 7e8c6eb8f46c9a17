// The CPU backend: a batched forward pass of llama-family models (llama, qwen2, qwen3,
// gemma3) over paged KV.
// Every matrix product covers all rows of the batch at once (each weight read once per
// step); attention reads K/V through each sequence's block table.
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
#include "kv_pages.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace arbor {

namespace {

// Row-wise work below this many rows runs on the calling thread: waking the pool
// costs more than it saves. From eight rows (eight chats decoding) it pays: the
// pool's waiting fell from about 6.2% to 5.0% of the samples of an 8-chat run.
constexpr int64_t kParallelRows = 8;

// Consecutive rows of one sequence that one attention task serves at most: a prompt's
// rows attend to the same pages, so each page is read (and an F16 page converted) once
// for them all. A 1024-token prompt: attention 31.7% -> 30.2% of the samples, 442 -> 460
// tokens/s (medians of six alternating runs). Decode rows, one per sequence, are unchanged.
constexpr int32_t kAttentionRows = 8;

// A thread's buffers for its attention tasks.
struct AttentionScratch {
    std::vector<float> queries;    // the task's rows' query heads of its KV head, side by side
    std::vector<float> scores;     // per row and head: its scores over the part's positions
    std::vector<float> values;     // a block's value rows of the task's part, as floats
};

// One task of a layer's attention: the query heads of one KV head, rows row .. row +
// rows - 1 (of one sequence, positions ascending), each over its positions in part
// `part` (BackendOptions::attention_part).
struct AttentionTask {
    int64_t row;
    int32_t rows, kv_head, part;
};

// A row and KV head attended in parts: its parts' results are partials first .. + parts - 1.
struct AttentionMerge {
    int64_t row;
    int32_t kv_head, parts;
    int64_t first;
};

// fn(page, offset, count, at) for each page's slice of positions [begin, end), in order
// (`at`: the slice's first position minus begin).
template <class F>
void for_each_page(const SequenceRows& seq, int32_t page_size, int32_t begin, int32_t end, F&& fn) {
    for (int32_t s = begin; s < end;) {
        const int32_t offset = s % page_size, count = std::min(page_size - offset, end - s);
        fn(seq.block_table[size_t(s / page_size)], offset, count, s - begin);
        s += count;
    }
}

class CpuBackend final : public Backend {
public:
    CpuBackend(const Model& model, const BackendOptions& options)
        : model_(model), cfg_(model.config()),
          pool_(options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()))),
          kv_(cfg_, options),
          activations_(options.int8_activations ? Activations::Int8 : Activations::Float),
          attention_part_(options.attention_part > 0 ? options.attention_part : std::numeric_limits<int32_t>::max()) {
        attention_scratch_.resize(size_t(pool_.size()));
        if (activations_ == Activations::Int8) check_int8_types();
        if (options.panel_weights && activations_ == Activations::Float) pack_panels();
    }

    std::string name() const override { return "cpu"; }
    std::string description() const override {
        return "CPU (" + std::string(isa_name(best_isa())) + ", " + std::to_string(pool_.size()) + " threads)";
    }
    int32_t page_size() const override { return kv_.page_size(); }
    int32_t page_count() const override { return kv_.page_count(); }
    size_t page_bytes() const override { return kv_.page_bytes(); }

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
    void check_int8_types() const;
    // A product's output description, through the weight's panels when it has them.
    MatmulOutput product(const TensorView& w, float* y, int64_t ldy, const std::vector<float>& bias = {}) const {
        const auto it = panels_.find(w.data);
        return {w, y, ldy, bias.empty() ? nullptr : bias.data(), it == panels_.end() ? nullptr : &it->second};
    }
    void resize(int64_t rows);
    template <class F>
    void for_rows(int64_t rows, F&& fn) {
        if (rows >= kParallelRows) pool_.parallel_for(rows, [&](int64_t t, int) { fn(t); });
        else for (int64_t t = 0; t < rows; ++t) fn(t);
    }
    void plan_attention(const ForwardBatch& batch);
    void attention(const ForwardBatch& batch, int32_t layer);
    // Where row t's heads of kv_head write part `part`: the output, or its partial
    // (then `stats` receives the part's softmax statistics).
    float* part_output(int64_t t, int32_t kv_head, int32_t part, SoftmaxStats*& stats);
    int32_t parts_of(int64_t t) const {
        return int32_t((int64_t(row_pos_[size_t(t)]) + attention_part_) / attention_part_);
    }
    // Positions [begin, end) of row t's part `part`.
    int32_t part_begin(int32_t part) const { return int32_t(int64_t(part) * attention_part_); }
    int32_t part_end(int64_t t, int32_t part) const {
        return int32_t(std::min<int64_t>(row_pos_[size_t(t)] + 1, int64_t(part + 1) * attention_part_));
    }
    void attend_rows(int32_t layer, const SequenceRows& seq, const AttentionTask& task, AttentionScratch& scratch);
    void merge_parts(const AttentionMerge& merge);

    const Model& model_;
    const ModelConfig& cfg_;
    ThreadPool pool_;
    KvPages kv_;
    MatmulScratch scratch_;
    Activations activations_;
    // Panel copies of the packable matrix weights, by the weight's data (the output
    // projection, when tied, shares token_embd's, and embedding lookups then read the
    // panels too).
    std::unordered_map<const uint8_t*, PanelWeights> panels_;
    // Positions per part of one row's attention. A row with more attends in parts, each
    // its own task, merged by the parts' softmax statistics (as flash-decoding does): a
    // decode row alone otherwise has only n_head_kv tasks (three for SmolLM2), which
    // leaves cores idle exactly when long histories make attention the larger half of a
    // step. Parts depend only on the row's position, so a row's bits never depend on its
    // batch.
    int32_t attention_part_;
    // Activations of the current step, rows x width.
    AlignedFloats x_, xn_, q_, k_, v_, att_, tmp_, gate_, up_, rope_;
    AlignedFloats rope_local_;  // the sliding-window layers' RoPE table, rows x head_dim
    std::vector<int32_t> row_pos_, row_seq_;
    std::vector<AttentionScratch> attention_scratch_;  // per thread
    std::vector<AttentionTask> attention_tasks_;  // the step's, the same in every layer
    std::vector<AttentionMerge> attention_merges_;  // likewise
    std::vector<int64_t> row_partials_;  // per row: its first partial, -1 when it has one part
    std::vector<float> partial_out_;              // per part: group x head_dim, normalized within the part
    std::vector<SoftmaxStats> partial_stats_;     // per part: one per query head of the group
    std::vector<double> part_shares_;  // merge_parts' scratch (merges run on the calling thread)
};

// Refused at start rather than failing in the first step.
void CpuBackend::check_int8_types() const {
    const ModelWeights& w = model_.weights();
    auto check = [](const TensorView& t) {
        if (!has_int8_dot(t.type))
            throw Error("int8 activations have no products for " + std::string(dtype_name(t.type)) +
                        " weights: run this model with float activations");
    };
    for (const auto& lw : w.layers)
        for (const TensorView* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) check(*t);
    check(w.output);
}

void CpuBackend::pack_panels() {
    const auto start = std::chrono::steady_clock::now();
    const ModelWeights& w = model_.weights();
    std::vector<const TensorView*> todo;
    auto want = [&](const TensorView& t) {
        if (PanelWeights::packable(t.type, t.cols) &&
            std::none_of(todo.begin(), todo.end(), [&](const TensorView* d) { return d->data == t.data; }))
            todo.push_back(&t);
    };
    for (const auto& lw : w.layers)
        for (const TensorView* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) want(*t);
    want(w.output);
    // All panels in one buffer of huge pages (huge_pages.h).
    std::vector<size_t> offsets;
    const std::shared_ptr<uint8_t[]> storage = PanelWeights::storage_for(todo, offsets);
    std::vector<std::optional<PanelWeights>> packed(todo.size());
    pool_.parallel_for(int64_t(todo.size()), [&](int64_t i, int) {
        if (offsets[size_t(i)] == SIZE_MAX) return;
        try {
            packed[size_t(i)] = PanelWeights::pack(*todo[size_t(i)], storage, offsets[size_t(i)]);
        } catch (const std::invalid_argument& e) {
            // Scales no real model has: this matrix keeps the GGUF order (exact for any value).
            spdlog::warn("{}; that matrix stays in GGUF order", e.what());
        }
    });
    for (size_t i = 0; i < todo.size(); ++i) {
        if (!packed[i]) continue;
        panels_.emplace(todo[i]->data, std::move(*packed[i]));
        // The panels replace the GGUF rows everywhere (products and embedding lookups),
        // so those pages need not stay resident beside the copy.
        model_.file().release_pages(todo[i]->data, size_t(todo[i]->rows) * todo[i]->row_stride);
    }
    size_t bytes = 0;
    for (const auto& [data, p] : panels_) bytes += p.panel_bytes() * size_t(p.panels());
    spdlog::info("packed {} weight matrices ({:.1f} MB) as panels in {:.0f} ms", panels_.size(), double(bytes) / 1e6,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

void CpuBackend::resize(int64_t rows) {
    const size_t r = size_t(rows);
    const size_t q_dim = size_t(cfg_.n_head) * size_t(cfg_.head_dim);
    x_.resize(r * size_t(cfg_.n_embd));
    xn_.resize(r * std::max(size_t(cfg_.n_embd), q_dim));
    tmp_.resize(r * size_t(cfg_.n_embd));
    q_.resize(r * q_dim);
    att_.resize(r * q_dim);
    k_.resize(r * size_t(cfg_.kv_dim()));
    v_.resize(r * size_t(cfg_.kv_dim()));
    gate_.resize(r * size_t(cfg_.n_ff));
    up_.resize(r * size_t(cfg_.n_ff));
    rope_.resize(r * size_t(cfg_.head_dim));
    if (!cfg_.local_layers.empty()) rope_local_.resize(r * size_t(cfg_.head_dim));
    row_pos_.resize(r);
    row_seq_.resize(r);
}

void CpuBackend::forward(const ForwardBatch& batch, std::vector<float>& logits) {
    validate_batch(batch, kv_.page_size(), kv_.page_count(), cfg_.n_vocab);
    const int64_t rows = int64_t(batch.tokens.size());
    const int64_t E = cfg_.n_embd, D = cfg_.head_dim, KV = cfg_.kv_dim();
    const int64_t QD = int64_t(cfg_.n_head) * D;
    const ModelWeights& w = model_.weights();
    resize(rows);
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
        const auto& seq = batch.sequences[s];
        for (int32_t i = 0; i < seq.n_rows; ++i) {
            row_pos_[size_t(seq.first_row + i)] = seq.start_pos + i;
            row_seq_[size_t(seq.first_row + i)] = int32_t(s);
        }
    }
    plan_attention(batch);
    const auto embd_panels = panels_.find(w.token_embd.data);
    for_rows(rows, [&](int64_t t) {
        const TokenId token = batch.tokens[size_t(t)];
        // Panels hold exactly the GGUF rows' values (PanelWeights::dequantize_row).
        if (embd_panels != panels_.end()) embd_panels->second.dequantize_row(token, &x_[size_t(t * E)]);
        else dequantize_row(w.token_embd.type, w.token_embd.row(token), &x_[size_t(t * E)], E);
        if (cfg_.embd_scale != 1.0f)
            for (float* x = &x_[size_t(t * E)]; x != &x_[size_t((t + 1) * E)]; ++x) *x *= cfg_.embd_scale;
        model_.rope_table(row_pos_[size_t(t)], &rope_[size_t(t * D)]);
        if (!cfg_.local_layers.empty()) model_.rope_table(row_pos_[size_t(t)], &rope_local_[size_t(t * D)], true);
    });

    // The row-wise pass before a product also quantizes each row it computes for the
    // product's panels (PanelRows::Ready), instead of the product quantizing them in a
    // pass of its own: with eight chats that is a pool pass fewer before three of a
    // layer's four products. `ready` says whether the next product reads such rows.
    bool ready = false;
    auto expect_rows = [&](std::span<const MatmulOutput> outputs, int64_t cols) {
        ready = uses_panel_rows(outputs, activations_);
        if (ready) scratch_.panel_activations.resize(rows, cols);
    };
    auto quantized = [&](int64_t t, const float* row) {
        if (ready) scratch_.panel_activations.quantize_row(t, row);
    };
    auto norm_row = [&](int64_t t, const std::vector<float>& weight) {
        rms_norm(&x_[size_t(t * E)], weight.data(), &xn_[size_t(t * E)], E, cfg_.rms_eps);
        quantized(t, &xn_[size_t(t * E)]);
    };
    // x += the branch's output in tmp_, normed first where the layer has a post-norm.
    auto add_row = [&](int64_t t, const std::vector<float>& post_norm) {
        float* x = &x_[size_t(t * E)];
        float* add = &tmp_[size_t(t * E)];
        if (!post_norm.empty()) rms_norm(add, post_norm.data(), add, E, cfg_.rms_eps);
        for (int64_t i = 0; i < E; ++i) x[i] += add[i];
    };
    // Per-head RMSNorm of a row's query and key heads (qwen3, gemma3), then RoPE.
    auto position_heads = [&](int64_t t, const LayerWeights& lw, const float* cs) {
        for (int32_t h = 0; h < cfg_.n_head; ++h) {
            float* q = &q_[size_t(t * QD + h * D)];
            if (!lw.attn_q_norm.empty()) rms_norm(q, lw.attn_q_norm.data(), q, D, cfg_.rms_eps);
            rope_apply(q, cs, D, cfg_.rope_neox);
        }
        for (int32_t h = 0; h < cfg_.n_head_kv; ++h) {
            float* k = &k_[size_t(t * KV + h * D)];
            if (!lw.attn_k_norm.empty()) rms_norm(k, lw.attn_k_norm.data(), k, D, cfg_.rms_eps);
            rope_apply(k, cs, D, cfg_.rope_neox);
        }
    };
    auto product_rows = [&](const float* x, std::span<const MatmulOutput> outputs) {
        matmul(pool_, x, rows, outputs, scratch_, activations_, ready ? PanelRows::Ready : PanelRows::Quantize);
    };
    auto qkv_of = [&](const LayerWeights& lw) {
        return std::array{product(lw.wq, q_.data(), QD, lw.bq), product(lw.wk, k_.data(), KV, lw.bk),
                          product(lw.wv, v_.data(), KV, lw.bv)};
    };

    // Layer 0's attention norm; each later layer's runs in the pass that ends the layer before.
    std::array<MatmulOutput, 3> qkv = qkv_of(w.layers[0]);
    expect_rows(qkv, E);
    for_rows(rows, [&](int64_t t) { norm_row(t, w.layers[0].attn_norm); });
    for (int32_t l = 0; l < cfg_.n_layer; ++l) {
        const LayerWeights& lw = w.layers[size_t(l)];
        product_rows(xn_.data(), qkv);
        const AlignedFloats& rope = cfg_.is_local(l) ? rope_local_ : rope_;
        for_rows(rows, [&](int64_t t) {
            position_heads(t, lw, &rope[size_t(t * D)]);
            const auto& seq = batch.sequences[size_t(row_seq_[size_t(t)])];
            kv_.store(l, seq.block_table, row_pos_[size_t(t)], &k_[size_t(t * KV)], &v_[size_t(t * KV)]);
        });
        attention(batch, l);
        const MatmulOutput o[] = {product(lw.wo, tmp_.data(), E)};
        ready = false;  // attention's rows are quantized by the product
        product_rows(att_.data(), o);
        const MatmulOutput gate_up[] = {product(lw.w_gate, gate_.data(), cfg_.n_ff),
                                        product(lw.w_up, up_.data(), cfg_.n_ff)};
        expect_rows(gate_up, E);
        for_rows(rows, [&](int64_t t) {
            add_row(t, lw.attn_post_norm);
            norm_row(t, lw.ffn_norm);
        });
        product_rows(xn_.data(), gate_up);
        const MatmulOutput down[] = {product(lw.w_down, tmp_.data(), E)};
        expect_rows(down, cfg_.n_ff);
        for_rows(rows, [&](int64_t t) {
            float* gate = &gate_[size_t(t * cfg_.n_ff)];
            if (cfg_.ffn_activation == ModelConfig::Activation::GeluTanh)
                gelu_tanh_mul(gate, &up_[size_t(t * cfg_.n_ff)], cfg_.n_ff);
            else
                silu_mul(gate, &up_[size_t(t * cfg_.n_ff)], cfg_.n_ff);
            quantized(t, gate);
        });
        product_rows(gate_.data(), down);
        const LayerWeights* next = l + 1 < cfg_.n_layer ? &w.layers[size_t(l + 1)] : nullptr;
        if (next) {
            qkv = qkv_of(*next);
            expect_rows(qkv, E);
        }
        for_rows(rows, [&](int64_t t) {
            add_row(t, lw.ffn_post_norm);
            if (next) norm_row(t, next->attn_norm);
        });
    }

    // Final norm and output projection, only for the rows whose logits are wanted.
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

// One task per (block of up to kAttentionRows rows of a sequence, KV head, part): the
// query heads sharing that KV head go through each page together, so each loaded key or
// value chunk serves up to three heads of each row at once. Each head's arithmetic is the
// same as alone.
void CpuBackend::plan_attention(const ForwardBatch& batch) {
    attention_tasks_.clear();
    attention_merges_.clear();
    const int64_t rows = int64_t(batch.tokens.size());
    row_partials_.assign(size_t(rows), -1);
    int64_t partials = 0;
    for (int64_t t = 0; t < rows; ++t) {
        const int32_t parts = parts_of(t);
        if (parts == 1) continue;
        row_partials_[size_t(t)] = partials;
        for (int32_t h = 0; h < cfg_.n_head_kv; ++h) attention_merges_.push_back({t, h, parts, partials + h * parts});
        partials += int64_t(cfg_.n_head_kv) * parts;
    }
    for (const auto& seq : batch.sequences) {
        // Blocks of equal size, so that the tasks of a short prompt are too.
        const int32_t blocks = (seq.n_rows + kAttentionRows - 1) / kAttentionRows;
        const int32_t block = (seq.n_rows + blocks - 1) / blocks;
        for (int64_t first = seq.first_row; first < seq.first_row + seq.n_rows; first += block) {
            const int64_t last = std::min<int64_t>(first + block, seq.first_row + seq.n_rows) - 1;
            for (int32_t h = 0; h < cfg_.n_head_kv; ++h)
                for (int32_t p = 0; p < parts_of(last); ++p) {
                    // Rows reach part p from some row on: positions ascend.
                    int64_t from = first;
                    while (parts_of(from) <= p) ++from;
                    attention_tasks_.push_back({from, int32_t(last + 1 - from), h, p});
                }
        }
    }
    const int32_t group = cfg_.n_head / cfg_.n_head_kv;
    partial_out_.resize(size_t(partials) * size_t(group) * size_t(cfg_.head_dim));
    partial_stats_.resize(size_t(partials) * size_t(group));
    int32_t longest = 0;
    for (int64_t t = 0; t < rows; ++t) longest = std::max(longest, std::min(row_pos_[size_t(t)] + 1, attention_part_));
    for (AttentionScratch& a : attention_scratch_) {
        a.queries.resize(size_t(kAttentionRows) * size_t(group) * size_t(cfg_.head_dim));
        a.scores.resize(size_t(kAttentionRows) * size_t(group) * size_t(longest));
        a.values.resize(size_t(longest) * size_t(cfg_.head_dim));
    }
}

float* CpuBackend::part_output(int64_t t, int32_t kv_head, int32_t part, SoftmaxStats*& stats) {
    const int64_t D = cfg_.head_dim;
    const int32_t group = cfg_.n_head / cfg_.n_head_kv;
    const int64_t first = row_partials_[size_t(t)];
    if (first < 0) {
        stats = nullptr;
        return &att_[size_t(t * int64_t(cfg_.n_head) * D + int64_t(kv_head) * group * D)];
    }
    const int64_t partial = first + int64_t(kv_head) * parts_of(t) + part;
    stats = &partial_stats_[size_t(partial * group)];
    return &partial_out_[size_t(partial * group * D)];
}

void CpuBackend::attention(const ForwardBatch& batch, int32_t layer) {
    pool_.parallel_for(int64_t(attention_tasks_.size()), [&](int64_t i, int thread) {
        const AttentionTask& task = attention_tasks_[size_t(i)];
        attend_rows(layer, batch.sequences[size_t(row_seq_[size_t(task.row)])], task,
                    attention_scratch_[size_t(thread)]);
    });
    for (const AttentionMerge& merge : attention_merges_) merge_parts(merge);
}

// The query heads of KV head task.kv_head, for each row of the task over its positions in
// part task.part: each row's output (or partial) is normalized over those positions alone.
// Consecutive rows that see the same keys of a page score them in one call (their query
// heads side by side, so the kernel's tiles take two rows' heads at once); a score's bits
// do not depend on its tile. A block of rows converts the part's values once for them all:
// F16 and Q8_0 values are converted to floats (exactly), and the F32 kernel then computes
// what the F16 or Q8_0 one would (cpu_ops.h), key after key as a lone row does page by page, so every row
// gets the same bits as a lone row reading the F16 pages directly.
// In a sliding-window layer a row sees only its last sliding_window positions: its scores
// before them are computed with the block's (whose first row reaches furthest back) but
// left out of its softmax and sum; a part wholly before its window gives the row zeros
// with softmax statistics {-inf, 0}, which the merge weighs by 0.
void CpuBackend::attend_rows(int32_t layer, const SequenceRows& seq, const AttentionTask& task,
                             AttentionScratch& scratch) {
    const int64_t D = cfg_.head_dim, QD = int64_t(cfg_.n_head) * D;
    const int32_t P = kv_.page_size();
    const int32_t group = cfg_.n_head / cfg_.n_head_kv;
    const float scale = cfg_.query_scale();
    const int32_t begin = part_begin(task.part);
    // Row i attends to positions [starts[i], ends[i]) of the part (none when they cross).
    std::array<int32_t, kAttentionRows> starts{}, ends{};
    const bool local = cfg_.is_local(layer);
    for (int32_t i = 0; i < task.rows; ++i) {
        ends[size_t(i)] = part_end(task.row + i, task.part);
        const int32_t window_start = local ? row_pos_[size_t(task.row + i)] - cfg_.sliding_window + 1 : 0;
        starts[size_t(i)] = std::max(begin, window_start);
    }
    // Row i's scores of head h at (i * group + h) * span: the last row has the most positions.
    const int32_t span = ends[size_t(task.rows - 1)] - begin;
    // The block's positions start where its first row's do (positions ascend).
    const int32_t from = std::min(starts[0], begin + span);
    const KvType type = kv_.type();
    // Row i's positions of the page slice starting `at` that holds `count`.
    auto within = [&](int32_t i, int32_t at, int32_t count) {
        return std::min(count, ends[size_t(i)] - begin - at);
    };
    // Row i's query heads at i * group * D, its scores of head h at (i * group + h) * span.
    // The queries carry the softmax's 1 / sqrt(D), which saves a pass over the scores (for
    // 64-element heads a power of two, so the scores' bits are those of scaling after).
    float* queries = scratch.queries.data();
    for (int32_t i = 0; i < task.rows; ++i) {
        const float* q = &q_[size_t((task.row + i) * QD + int64_t(task.kv_head) * group * D)];
        std::transform(q, q + group * D, queries + size_t(i) * size_t(group * D), [&](float x) { return x * scale; });
    }
    auto scores_of = [&](int32_t i) { return &scratch.scores[size_t(i) * size_t(group) * size_t(span)]; };
    // Pages are scattered over the pool: while the key loop computes a page it asks for
    // the next page's keys and for this page's value rows (the softmax reads them only
    // after the loop). With eight chats attention fell from 9.2-9.9% of the samples to 8.3%
    // with the next key page alone, and to 6.3-6.5% with the value rows asked for page by
    // page (all at the start of the task: 8.3%; in the value loop, or into L2 only: less).
    // (Kept inside this function: a function of prefetches alone has no effect that GCC
    // sees, and its calls were dropped.)
    const size_t row_bytes =
        size_t(D) * (type == KvType::F32 ? sizeof(float) : type == KvType::F16 ? sizeof(uint16_t) : sizeof(int8_t));
    auto prefetch = [&](const void* from, size_t bytes) {
        const auto* at = static_cast<const char*>(from);
        for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(at + b);
    };
    const int32_t key_stride = kv_.key_stride();
    for_each_page(seq, P, from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t at) {
        at += from - begin;
        // Any slot of a page's keys needs every row of its columns.
        if (const int32_t next = begin + at + count; next < begin + span)
            prefetch(kv_.keys(layer, seq.block_table[size_t(next / P)], task.kv_head), kv_.key_head_bytes());
        prefetch(kv_.values(layer, page, task.kv_head, offset), size_t(count) * row_bytes);
        const void* keys = kv_.keys(layer, page, task.kv_head);
        for (int32_t i = 0, n = 1; i < task.rows; i += n) {
            const int32_t c = within(i, at, count);
            for (n = 1; i + n < task.rows && within(i + n, at, count) == c;) ++n;
            if (c <= 0) continue;
            const float* q = queries + size_t(i) * size_t(group * D);
            if (type == KvType::F16)
                dot_columns_f16(q, n * group, static_cast<const uint16_t*>(keys), key_stride, offset, c, D,
                                scores_of(i) + at, span);
            else if (type == KvType::Q8_0)
                dot_columns_q8_0(q, n * group, static_cast<const int8_t*>(keys),
                                 kv_.key_scales(layer, page, task.kv_head), key_stride, offset, c, D,
                                 scores_of(i) + at, span);
            else
                dot_columns_f32(q, n * group, static_cast<const float*>(keys), key_stride, offset, c, D,
                                scores_of(i) + at, span);
        }
    });
    std::array<float*, kAttentionRows> outs{};
    for (int32_t i = 0; i < task.rows; ++i) {
        SoftmaxStats* stats = nullptr;
        outs[size_t(i)] = part_output(task.row + i, task.kv_head, task.part, stats);
        const int32_t n = std::max(0, ends[size_t(i)] - starts[size_t(i)]);
        for (int32_t h = 0; h < group; ++h) {
            const SoftmaxStats s = softmax(scores_of(i) + size_t(h) * size_t(span) + (starts[size_t(i)] - begin), n);
            if (stats) stats[h] = s;
        }
        std::fill(outs[size_t(i)], outs[size_t(i)] + group * D, 0.0f);
    }
    if (task.rows == 1) {
        for_each_page(seq, P, from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t at) {
            const void* rows = kv_.values(layer, page, task.kv_head, offset);
            const float* weights = scores_of(0) + (from - begin) + at;
            if (type == KvType::F16)
                accumulate_rows_f16(weights, span, group, static_cast<const uint16_t*>(rows), count, D, outs[0]);
            else if (type == KvType::Q8_0)
                accumulate_rows_q8_0(weights, span, group, static_cast<const int8_t*>(rows),
                                     kv_.value_scales(layer, page, task.kv_head, offset), count, D, outs[0]);
            else
                accumulate_rows_f32(weights, span, group, static_cast<const float*>(rows), count, D, outs[0]);
        });
        return;
    }
    // A block gathers the part's value rows once, as floats in position order; each row then
    // adds all of its own in one call, its sums held in registers from the first to the
    // last (called page by page, they went through memory at every page).
    float* values = scratch.values.data();  // from position `from` on
    for_each_page(seq, P, from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t at) {
        const void* rows = kv_.values(layer, page, task.kv_head, offset);
        float* to = values + size_t(at) * size_t(D);
        if (type == KvType::F16) f32_from_f16(static_cast<const uint16_t*>(rows), to, int64_t(count) * D);
        else if (type == KvType::Q8_0)
            f32_from_q8_0(static_cast<const int8_t*>(rows), kv_.value_scales(layer, page, task.kv_head, offset), count,
                          D, to);
        else std::copy_n(static_cast<const float*>(rows), size_t(count) * size_t(D), to);
    });
    for (int32_t i = 0; i < task.rows; ++i)
        if (const int32_t n = ends[size_t(i)] - starts[size_t(i)]; n > 0)
            accumulate_rows_f32(scores_of(i) + (starts[size_t(i)] - begin), span, group,
                                values + size_t(starts[size_t(i)] - from) * size_t(D), n, D, outs[size_t(i)]);
}

// The parts of one (row, KV head): each head's output is the parts' outputs weighted by
// their share of the whole softmax sum, sum_p * exp(max_p - max), in part order.
void CpuBackend::merge_parts(const AttentionMerge& merge) {
    const int64_t D = cfg_.head_dim, QD = int64_t(cfg_.n_head) * D;
    const int32_t group = cfg_.n_head / cfg_.n_head_kv;
    float* out = &att_[size_t(merge.row * QD + int64_t(merge.kv_head) * group * D)];
    std::vector<double>& share = part_shares_;
    share.resize(size_t(merge.parts));
    for (int32_t h = 0; h < group; ++h) {
        auto part = [&](int32_t p) { return size_t((merge.first + p) * group + h); };
        float max = -INFINITY;
        for (int32_t p = 0; p < merge.parts; ++p) max = std::max(max, partial_stats_[part(p)].max);
        double total = 0.0;
        for (int32_t p = 0; p < merge.parts; ++p) {
            const SoftmaxStats& s = partial_stats_[part(p)];
            total += share[size_t(p)] = double(s.sum) * std::exp(double(s.max) - double(max));
        }
        float* o = out + h * D;
        std::fill(o, o + D, 0.0f);
        for (int32_t p = 0; p < merge.parts; ++p)
            axpy_f32(float(share[size_t(p)] / total), &partial_out_[part(p) * size_t(D)], o, D);
    }
}

} // namespace

std::unique_ptr<Backend> make_cpu_backend(const Model& model, const BackendOptions& options) {
    return std::make_unique<CpuBackend>(model, options);
}

} // namespace arbor
