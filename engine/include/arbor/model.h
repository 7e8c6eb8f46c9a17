// A loaded model: configuration, weight views into the mapped GGUF file, tokenizer and
// chat template. Supported architectures: llama (Llama 2/3.x, Mistral, SmolLM2,
// TinyLlama) and qwen2.
#pragma once

#include "arbor/gguf.h"
#include "arbor/kernels/tensor_view.h"
#include "arbor/tokenizer.h"

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
    int32_t n_ff = 0;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;
    float rms_eps = 1e-5f;
    float rope_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // linear position scaling (1 / scaling factor)
    bool rope_neox = false;        // rotate halves (qwen2) instead of adjacent pairs (llama)

    int32_t kv_dim() const { return n_head_kv * head_dim; }
};

struct LayerWeights {
    std::vector<float> attn_norm, ffn_norm;
    TensorView wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;  // empty without QKV bias
    TensorView w_gate, w_up, w_down;
};

struct ModelWeights {
    TensorView token_embd;
    std::vector<LayerWeights> layers;
    std::vector<float> output_norm;
    TensorView output;              // token_embd when tied
    // Per-frequency divisors of llama3-style RoPE scaling (rope_freqs.weight); empty if none.
    std::vector<float> rope_freq_factors;
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

    // cos/sin pairs (head_dim/2 of them) for position pos.
    void rope_table(int32_t pos, float* cos_sin) const;
    // The angle per position of each rotated pair (head_dim/2), scaling factors included:
    // rope_table's pair i is at pos * rope_inv_freq()[i].
    const std::vector<float>& rope_inv_freq() const { return inv_freq_; }

private:
    Model() = default;
    std::unique_ptr<GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::string chat_template_;
    std::vector<float> inv_freq_;  // per rotated pair, including scaling factors
};

} // namespace arbor
