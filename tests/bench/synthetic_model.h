// Synthetic models: GGUF files of a real model's shape with seeded random weights and a
// small byte-level BPE vocabulary, so that tests and benchmarks need no download.
// The weights are random blocks of the asked type (random codes, scales chosen so that a
// weight has a standard deviation near 1/sqrt(row length)): activations stay bounded
// and logits finite, but the model says nothing meaningful.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbor::synth {

// Bumped whenever the bytes written for a given spec change, so that cached files of an
// older generator are not reused (arbor-bench --synthetic names its files with it).
inline constexpr int kGeneratorVersion = 1;

// qwen2: Q/K/V biases, NEOX RoPE. qwen3: per-head Q/K norms, NEOX RoPE. gemma3: Q/K
// norms, post-attention and post-FFN norms, GELU, sliding window on five layers of every
// six, global RoPE base 1e6 with linear scaling by 8 (as Gemma 3 4B and larger), local 1e4.
// smollm3: llama's tensors, every fourth layer without RoPE (llama.cpp fixes the interval).
// phi3: fused attn_qkv and fused gate/up in ffn_up (gate's rows first), NEOX RoPE,
// LongRoPE's factors with Shape::longrope_ctx.
// qwen3moe: qwen3's attention; in each layer a router (ffn_gate_inp) and experts stacked
// as llama.cpp's ffn_gate_exps / ffn_up_exps / ffn_down_exps instead of the dense FFN.
// mistral3: llama's tensors; with --yarn, Ministral 3's YaRN keys (betas 32 and 1, log
// multiplier 1) and attention temperature 0.1 over the shape's trained context.
// gpt-oss (llama.cpp's openai-moe): Q/K/V and output biases, attention sinks (mean 1,
// sigma 1), the FFN norm named post_attention_norm, a biased router and biased experts
// whose gate and up have sigma 4/sqrt(cols) (so gpt-oss's clamp at 7 is reached), sliding
// window on even layers (llama.cpp's default period 2), a separate output.
enum class Arch { Llama, Qwen2, Qwen3, Gemma3, Smollm3, Phi3, Qwen3moe, Mistral3, GptOss };
std::string_view arch_name(Arch arch);
std::optional<Arch> arch_named(std::string_view name);

struct Shape {
    std::string name;
    int n_layer = 0;
    int n_embd = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int n_ff = 0;
    int n_vocab = 0;
    bool tied = true;          // output projection is token_embd
    int n_ctx_train = 4096;
    double rope_base = 10000.0;
    int sliding_window = 512;  // gemma3's and gpt-oss's local layers only
    // YaRN RoPE scaling by this factor over the n_ctx_train positions trained (the file's
    // context_length is n_ctx_train times it, as a YaRN-extended Qwen3's); 0: none.
    int yarn_factor = 0;
    int rope_dims = 0;  // rotated dimensions of a head (phi3 may rotate part of it); 0: head_dim
    // phi3's LongRoPE over this original context (rope.scaling.original_context_length;
    // the file's context_length stays n_ctx_train): rope_factors_long.weight (uniform in
    // 1..15) and rope_factors_short.weight (1..2), one per rotated pair, and the
    // converter's attn_factor sqrt(1 + ln(n_ctx_train / original) / ln(original)); 0: none.
    int longrope_ctx = 0;
    // qwen3moe's and gpt-oss's routed experts: n_expert_used of n_expert per token,
    // each expert_ff wide (0: n_ff).
    int n_expert = 8;
    int n_expert_used = 2;
    int expert_ff = 0;
    Arch arch = Arch::Llama;  // the published model's; arbor-synth --arch and SHAPE:TYPE:ARCH replace it
    int expert_width() const { return expert_ff > 0 ? expert_ff : n_ff; }
};

// The named shapes: tiny (2 layers, 256 embd, for tests), 135m (SmolLM2-135M), 135m-32k
// (the same with a 32k context), 1b (Llama-3.2-1B), 3b (Llama-3.2-3B), 8b (Llama-3.1-8B),
// each llama; and of other architectures qwen3-1.7b (Qwen3-1.7B), gemma3-1b (Gemma 3 1B),
// smollm3-3b (SmolLM3-3B), phi4-mini (Phi-4-mini: partial rotary, LongRoPE),
// ministral3-3b (Ministral 3 3B's text model: YaRN with its attention temperature), and two
// scaled-down mixtures of experts that fit a small machine: qwen3moe-1.7b-a0.3b
// (Qwen3-30B-A3B's structure, 64 experts of which 8 per token, at 1024 embd and 16
// layers: 1.7B weights, 0.3B per token) and gpt-oss-20b-4l (gpt-oss-20b's layer, 32
// experts of which 4, with 4 of its 24 layers). Vocabulary 32000 (tiny: 512).
std::optional<Shape> shape_named(std::string_view name);
std::vector<std::string> shape_names();


// The weight types of a file: one type for every matrix, or a mix like llama.cpp's
// Q4_K_M (Q4_K, with Q6_K for the output and some layers' attn_v and ffn_down).
// mxfp4_moe: llama.cpp's MXFP4_MOE, routed experts' matrices MXFP4 and the rest F32.
struct WeightTypes {
    std::string name;  // "q4_k", "q4_k_m", ...
    DType base = DType::F32;
    bool q4_k_m = false;
    bool mxfp4_moe = false;
};
// f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q2_k q3_k iq4_nl iq4_xs mxfp4
// q4_k_m mxfp4_moe (any case).
std::optional<WeightTypes> weight_types_named(std::string_view name);
std::vector<std::string> weight_type_names();

// The type of one weight matrix. `layer` is -1 for token_embd and output. K-quant
// matrices whose rows are not a multiple of 256 take llama.cpp's fallback (Q4_K -> Q5_0,
// Q5_K -> Q5_1, Q6_K -> Q8_0). Norms and biases are always F32.
DType matrix_type(const WeightTypes& types, std::string_view tensor, int layer, int n_layer, int64_t cols,
                  bool tied);

struct SyntheticSpec {
    Shape shape;
    Arch arch = Arch::Llama;
    WeightTypes types;
    uint64_t seed = 1;
    int threads = 0;  // 0: every core; never changes the bytes written
};

// Checks the spec (head counts, sizes that the block types divide); throws
// std::invalid_argument naming the problem.
void validate(const SyntheticSpec& spec);

struct WriteResult {
    uint64_t bytes = 0;
    double seconds = 0.0;
};

// Writes the model to `path` tensor by tensor (memory use does not grow with the
// model), through a temporary file renamed at the end so that `path` never holds a
// partial model. The same spec gives the same bytes, whatever `threads`.
// Throws std::invalid_argument for a bad spec, std::runtime_error for I/O errors.
WriteResult write_synthetic_model(const SyntheticSpec& spec, const std::filesystem::path& path);

} // namespace arbor::synth
