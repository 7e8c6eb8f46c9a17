// A loaded model: configuration, weight views into the mapped GGUF file, tokenizer and
// chat template. Supported architectures: llama (Llama 2/3.x, Mistral, SmolLM2,
// TinyLlama), qwen2, qwen3, qwen3moe, gemma3, smollm3, phi3, mistral3 and gpt-oss
// (gpt-oss).
#pragma once

#include "arbor/gguf.h"
#include "arbor/kernels/tensor_view.h"
#include "arbor/tokenizer.h"

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace arbor {

struct ModelConfig {
    std::string architecture;
    std::string name;
    int32_t n_layer = 0;
    int32_t n_embd = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    int32_t n_rot = 0;  // leading dimensions of each head that RoPE rotates (head_dim but for phi3's partial rotary)
    int32_t n_ff = 0;
    // Routed experts: each token's FFN is the weighted sum of n_expert_used experts (of
    // n_expert), each n_ff_exp wide. n_expert 0: a dense FFN of n_ff. How the experts are
    // chosen and weighted:
    //   SoftmaxAll (qwen3moe): the highest probabilities of a softmax over all router
    //     logits, each divided by the chosen ones' sum;
    //   SoftmaxChosen (gpt-oss): the highest router logits, weighted by a softmax over
    //     the chosen logits alone (the same experts and, up to rounding, the same weights
    //     as SoftmaxAll: kept apart as llama.cpp computes them apart).
    int32_t n_expert = 0;
    int32_t n_expert_used = 0;
    int32_t n_ff_exp = 0;
    enum class Gating { SoftmaxAll, SoftmaxChosen } expert_gating = Gating::SoftmaxAll;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // linear position scaling (1 / scaling factor)
    bool rope_neox = false;        // rotate halves (qwen2, qwen3, gemma3) instead of adjacent pairs (llama, smollm3)
    // YaRN (rope.scaling.type "yarn", llama.cpp's reading): each pair's frequency blends
    // the scaled and unscaled one along a ramp between the pairs that turn beta_fast (32)
    // and beta_slow (1) times over rope_yarn_orig_ctx positions, and cos/sin grow by
    // 1 + 0.1 ln(factor). rope_attn_factor (rope.scaling.attn_factor) multiplies cos/sin
    // whatever the scaling type.
    bool rope_yarn = false;
    int32_t rope_yarn_orig_ctx = 0;
    float rope_attn_factor = 1.0f;
    // Phi-3's LongRoPE (rope_factors_long/short.weight, llama.cpp's reading): each rotated
    // pair's frequency is divided by the long factors when the context a backend runs
    // exceeds rope_long_orig_ctx positions (rope.scaling.original_context_length, else
    // the trained context), by the short ones otherwise; cos/sin are times
    // rope_attn_factor either way. 0: no LongRoPE.
    int32_t rope_long_orig_ctx = 0;
    // The ramp's bounds and mistral3's yarn_log_multiplier (llama.cpp reads them from the
    // metadata for mistral3 only): with a multiplier m, cos/sin grow by
    // (1 + 0.1 ln f) / (1 + 0.1 m ln f) instead of 1 + 0.1 ln f.
    float rope_yarn_beta_fast = 32.0f;
    float rope_yarn_beta_slow = 1.0f;
    float rope_yarn_log_mul = 0.0f;
    // Mistral 3's attention temperature (Llama 4's): queries at position p are scaled by
    // 1 + attn_temp_scale * ln(floor(p / attn_temp_floor) + 1); 0: none.
    float attn_temp_scale = 0.0f;
    int32_t attn_temp_floor = 0;
    // SmolLM3: every no_rope_interval-th layer (layers interval-1, 2*interval-1, ...)
    // attends without positions (NoPE); 0: every layer rotates.
    int32_t no_rope_interval = 0;
    // Gemma 3's steps (1 / none for the others): the token embedding times embd_scale,
    // queries times attn_scale (else 1 / sqrt(head_dim)), GELU-tanh instead of SiLU in the
    // gated FFN, and final logits soft-capped as cap * tanh(logit / cap) when cap > 0.
    float embd_scale = 1.0f;
    float attn_scale = 0.0f;
    // SwigluOai (gpt-oss's experts): g = min(gate, 7), u = clamp(up, -7, 7),
    // out = g * sigmoid(1.702 g) * (u + 1).
    enum class Activation { Silu, GeluTanh, SwigluOai } ffn_activation = Activation::Silu;
    float final_logit_softcap = 0.0f;
    // Sliding-window attention: a layer marked local attends to the last
    // sliding_window positions only (its own included) and rotates with rope_base_local,
    // unscaled unless rope_scaled_local (gpt-oss: its local layers take the global
    // layers' scaling, YaRN included). Empty: every layer is global.
    int32_t sliding_window = 0;
    std::vector<bool> local_layers;
    float rope_base_local = 10000.0f;
    bool rope_scaled_local = false;
    // Learned attention sinks (gpt-oss): each query head's softmax has one more logit,
    // the layer's attn_sinks value of that head, which takes its share of the weight and
    // adds no value.
    bool attn_sinks = false;
    // What the file asks for that Arbor runs otherwise (one sentence; empty: nothing),
    // shown at load with the other warnings (load_warnings.h).
    std::string load_warning;

    int32_t kv_dim() const { return n_head_kv * head_dim; }
    bool has_experts() const { return n_expert > 0; }
    bool is_local(int32_t layer) const { return !local_layers.empty() && local_layers[size_t(layer)]; }
    bool uses_rope(int32_t layer) const { return no_rope_interval == 0 || (layer + 1) % no_rope_interval != 0; }
    float query_scale() const { return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(float(head_dim)); }
    float query_temperature(int32_t pos) const {
        return float(std::log(std::floor(double(pos) / attn_temp_floor) + 1.0) * attn_temp_scale + 1.0);
    }
};

// The configuration Model::load would use, read from the metadata and the tensor list
// alone (no tensor data is touched). Throws arbor::Error naming the problem: an unsupported architecture, a missing
// or invalid key, a feature the engine does not run.
ModelConfig read_model_config(const GgufFile& file);

struct LayerWeights {
    std::vector<float> attn_norm, ffn_norm;
    TensorView wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;  // empty without QKV bias
    std::vector<float> bo;          // the attention output's bias (gpt-oss); else empty
    std::vector<float> attn_sinks;  // one logit per query head (gpt-oss); else empty
    // Per-head RMSNorm of queries and keys before RoPE (qwen3, gemma3), head_dim each;
    // norms of the attention and FFN outputs before the residual add (gemma3). Empty when
    // the architecture has none.
    std::vector<float> attn_q_norm, attn_k_norm;
    std::vector<float> attn_post_norm, ffn_post_norm;
    TensorView w_gate, w_up, w_down;  // empty in a layer of experts
    // A layer of experts: the router (n_expert rows) and the experts' matrices stacked as
    // llama.cpp's ffn_*_exps, expert e's rows following expert e-1's (expert_rows).
    TensorView ffn_gate_inp;
    TensorView gate_exps, up_exps, down_exps;
    // Biases of a layer of experts (gpt-oss; else empty): the router's (n_expert), and
    // each expert's gate/up (n_ff_exp) and down (n_embd) biases, expert e's after e-1's.
    std::vector<float> ffn_gate_inp_b;
    std::vector<float> gate_exps_b, up_exps_b, down_exps_b;
};

// Expert e's matrix of a stack of n_expert equal matrices (its rows / n_expert rows each).
inline TensorView expert_rows(const TensorView& stack, int32_t n_expert, int32_t e) {
    const int64_t rows = stack.rows / n_expert;
    return TensorView{stack.type, stack.cols, rows, stack.row(int64_t(e) * rows), stack.row_stride};
}

struct ModelWeights {
    TensorView token_embd;
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;
    TensorView output;              // token_embd when tied
    // Per-frequency divisors of llama3-style RoPE scaling (rope_freqs.weight); empty if none.
    std::vector<float> rope_freq_factors;
    // LongRoPE's divisors per rotated pair for long and for short contexts
    // (ModelConfig::rope_long_orig_ctx); each empty if the file has none.
    std::vector<float> rope_factors_long, rope_factors_short;
};

class Model {
public:
    // Throws arbor::Error naming the problem: unreadable file, unsupported architecture,
    // missing or mis-shaped tensor, unsupported tensor type.
    static std::unique_ptr<Model> load(const std::filesystem::path& path);

    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const GgufFile& file() const { return *file_; }
    // Jinja source of the chat template, empty when the file has none.
    const std::string& chat_template_source() const { return chat_template_; }

    // Whether a backend running sequences of up to `context` positions rotates with
    // LongRoPE's long factors (the context exceeds the original one); false for models
    // without LongRoPE.
    bool rope_long_factors(int32_t context) const {
        return config_.rope_long_orig_ctx > 0 && context > config_.rope_long_orig_ctx;
    }
    // cos/sin pairs (n_rot/2 of them) for position pos, of the global layers or (local)
    // of the sliding-window layers, each times rope_mscale(local); long_factors: the
    // global layers' with LongRoPE's long factors (rope_long_factors).
    void rope_table(int32_t pos, float* cos_sin, bool local = false, bool long_factors = false) const;
    // The angle per position of each rotated pair (n_rot/2), scaling factors included:
    // rope_table's pair i is at pos * rope_inv_freq()[i]. Without long_factors a LongRoPE
    // model's global table has the short factors.
    const std::vector<float>& rope_inv_freq(bool local = false, bool long_factors = false) const {
        return local ? inv_freq_local_ : long_factors && !inv_freq_long_.empty() ? inv_freq_long_ : inv_freq_;
    }
    // The factor on cos and sin (YaRN's magnitude correction and rope.scaling.attn_factor);
    // 1 for most models.
    float rope_mscale(bool local = false) const { return local ? mscale_local_ : mscale_; }

private:
    Model() = default;
    std::unique_ptr<GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string chat_template_;
    std::vector<float> inv_freq_;  // per rotated pair, including scaling factors
    std::vector<float> inv_freq_local_;  // likewise for sliding-window layers; empty without them
    std::vector<float> inv_freq_long_;   // the global layers' with LongRoPE's long factors; empty without LongRoPE
    float mscale_ = 1.0f, mscale_local_ = 1.0f;
};

} // namespace arbor
