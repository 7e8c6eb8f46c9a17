#include "synthetic_model.h"

#include "synthetic_blocks.h"
#include "synthetic_vocab.h"
#include "../gguf/gguf_test_writer.h"

#include "arbor/kernels/quant_blocks.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace arbor::synth {
namespace {

using test::gv::f32;
using test::gv::str;
using test::gv::u32;

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Shapes of the published models (their config.json); the vocabulary is ours. 135m-32k
// is SmolLM2-135M with a 32k context instead of its 8k: the restart workload's 16k
// conversation at the default model's cost per token.
const std::vector<Shape>& shapes() {
    static const std::vector<Shape> all = {
        {"tiny", 2, 256, 4, 2, 64, 512, 512, true, 4096, 10000.0, 512},
        {"135m", 30, 576, 9, 3, 64, 1536, 32000, true, 8192, 100000.0, 512},
        {"135m-32k", 30, 576, 9, 3, 64, 1536, 32000, true, 32768, 100000.0, 512},
        {"1b", 16, 2048, 32, 8, 64, 8192, 32000, true, 131072, 500000.0, 512},
        {"3b", 28, 3072, 24, 8, 128, 8192, 32000, true, 131072, 500000.0, 512},
        {"8b", 32, 4096, 32, 8, 128, 14336, 32000, false, 131072, 500000.0, 512},
        {.name = "qwen3-1.7b", .n_layer = 28, .n_embd = 2048, .n_head = 16, .n_head_kv = 8, .head_dim = 128,
         .n_ff = 6144, .n_vocab = 32000, .tied = true, .n_ctx_train = 40960, .rope_base = 1e6, .arch = Arch::Qwen3},
        {.name = "gemma3-1b", .n_layer = 26, .n_embd = 1152, .n_head = 4, .n_head_kv = 1, .head_dim = 256,
         .n_ff = 6912, .n_vocab = 32000, .tied = true, .n_ctx_train = 32768, .sliding_window = 512,
         .arch = Arch::Gemma3},
        {.name = "smollm3-3b", .n_layer = 36, .n_embd = 2048, .n_head = 16, .n_head_kv = 4, .head_dim = 128,
         .n_ff = 11008, .n_vocab = 32000, .tied = true, .n_ctx_train = 65536, .rope_base = 5e6,
         .arch = Arch::Smollm3},
        {.name = "phi4-mini", .n_layer = 32, .n_embd = 3072, .n_head = 24, .n_head_kv = 8, .head_dim = 128,
         .n_ff = 8192, .n_vocab = 32000, .tied = true, .n_ctx_train = 131072, .rope_dims = 96,
         .longrope_ctx = 4096, .arch = Arch::Phi3},
        {.name = "qwen3moe-1.7b-a0.3b", .n_layer = 16, .n_embd = 1024, .n_head = 16, .n_head_kv = 4,
         .head_dim = 128, .n_ff = 4096, .n_vocab = 32000, .tied = false, .n_ctx_train = 40960, .rope_base = 1e6,
         .n_expert = 64, .n_expert_used = 8, .expert_ff = 512, .arch = Arch::Qwen3moe},
        // Ministral 3 3B's text model: YaRN 16 over 16k (the file's context_length is the
        // original one here).
        {.name = "ministral3-3b", .n_layer = 26, .n_embd = 3072, .n_head = 32, .n_head_kv = 8, .head_dim = 128,
         .n_ff = 9216, .n_vocab = 32000, .tied = true, .n_ctx_train = 16384, .rope_base = 1e6, .yarn_factor = 16,
         .arch = Arch::Mistral3},
        {.name = "gpt-oss-20b-4l", .n_layer = 4, .n_embd = 2880, .n_head = 64, .n_head_kv = 8, .head_dim = 64,
         .n_ff = 2880, .n_vocab = 32000, .tied = false, .n_ctx_train = 4096, .rope_base = 150000.0,
         .sliding_window = 128, .yarn_factor = 32, .n_expert = 32, .n_expert_used = 4, .arch = Arch::GptOss},
    };
    return all;
}

struct TypeName {
    const char* name;
    DType type;
    uint32_t file_type;  // general.file_type, as llama.cpp numbers them
};
constexpr TypeName kTypes[] = {
    {"f32", DType::F32, 0},   {"f16", DType::F16, 1},   {"bf16", DType::BF16, 32}, {"q8_0", DType::Q8_0, 7},
    {"q4_0", DType::Q4_0, 2}, {"q4_1", DType::Q4_1, 3}, {"q5_0", DType::Q5_0, 8},  {"q5_1", DType::Q5_1, 9},
    {"q4_k", DType::Q4_K, 14}, {"q5_k", DType::Q5_K, 16}, {"q6_k", DType::Q6_K, 18},
    {"q2_k", DType::Q2_K, 10}, {"q3_k", DType::Q3_K, 11}, {"iq4_nl", DType::IQ4_NL, 25},
    {"iq4_xs", DType::IQ4_XS, 30},
    // llama.cpp has no file type of MXFP4 matrices throughout: its MXFP4_MOE's number.
    {"mxfp4", DType::MXFP4, 38},
};
constexpr uint32_t kFileTypeQ4_K_M = 15;
constexpr uint32_t kFileTypeMxfp4Moe = 38;

bool is_k_quant(DType t) {
    return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ||
           t == DType::IQ4_XS;
}

// llama.cpp's choice of the layers whose attn_v and ffn_down get more bits in Q4_K_M.
bool more_bits(int layer, int n_layer) {
    return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// One tensor of the file: what to write and how to draw it.
struct Plan {
    std::string name;
    DType type;
    std::vector<uint64_t> dims;  // dims[0] is the row length
    double mean = 0.0;
    double sigma = 0.0;

    uint64_t n_elements() const {
        uint64_t n = 1;
        for (uint64_t d : dims) n *= d;
        return n;
    }
    uint64_t n_blocks() const { return n_elements() / uint64_t(dtype_info(type).block_size); }
    uint64_t n_bytes() const { return n_blocks() * dtype_info(type).block_bytes; }
};

std::vector<Plan> plan_tensors(const SyntheticSpec& spec) {
    const Shape& s = spec.shape;
    const uint64_t embd = uint64_t(s.n_embd), ff = uint64_t(s.n_ff), vocab = uint64_t(s.n_vocab);
    const uint64_t q_dim = uint64_t(s.n_head) * uint64_t(s.head_dim), kv_dim = uint64_t(s.n_head_kv) * uint64_t(s.head_dim);
    std::vector<Plan> plans;
    auto matrix = [&](std::string name, int layer, uint64_t cols, uint64_t rows, double sigma) {
        const DType t = matrix_type(spec.types, name, layer, s.n_layer, int64_t(cols), s.tied);
        plans.push_back({std::move(name), t, {cols, rows}, 0.0, sigma});
    };
    auto vector = [&](std::string name, uint64_t n, double mean, double sigma) {
        plans.push_back({std::move(name), DType::F32, {n}, mean, sigma});
    };
    // n_expert matrices of rows x cols in one tensor [cols, rows, n_expert].
    const uint64_t n_expert = uint64_t(s.n_expert), expert_ff = uint64_t(s.expert_width());
    auto experts = [&](std::string name, int layer, uint64_t cols, uint64_t rows, double sigma) {
        const DType t = matrix_type(spec.types, name, layer, s.n_layer, int64_t(cols), s.tied);
        plans.push_back({std::move(name), t, {cols, rows, n_expert}, 0.0, sigma});
    };
    // Inputs to a projection have unit scale after RMSNorm, so 1/sqrt(cols) keeps each
    // output near unit scale; the residual branches (o, down) add half of that.
    const double unit = 1.0 / std::sqrt(double(embd));
    matrix("token_embd.weight", -1, embd, vocab, unit);
    vector("output_norm.weight", embd, 1.0, 0.05);
    if (!s.tied) matrix("output.weight", -1, embd, vocab, unit);
    if (s.longrope_ctx > 0) {
        const uint64_t pairs = uint64_t(s.rope_dims > 0 ? s.rope_dims : s.head_dim) / 2;
        vector("rope_factors_long.weight", pairs, 8.0, 7.0 / std::sqrt(3.0));
        vector("rope_factors_short.weight", pairs, 1.5, 0.5 / std::sqrt(3.0));
    }
    for (int i = 0; i < s.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        vector(p + "attn_norm.weight", embd, 1.0, 0.05);
        if (spec.arch == Arch::Phi3) {
            matrix(p + "attn_qkv.weight", i, embd, q_dim + 2 * kv_dim, unit);
        } else {
            matrix(p + "attn_q.weight", i, embd, q_dim, unit);
            matrix(p + "attn_k.weight", i, embd, kv_dim, unit);
            matrix(p + "attn_v.weight", i, embd, kv_dim, unit);
        }
        if (spec.arch == Arch::Qwen2 || spec.arch == Arch::GptOss) {
            vector(p + "attn_q.bias", q_dim, 0.0, 0.1);
            vector(p + "attn_k.bias", kv_dim, 0.0, 0.1);
            vector(p + "attn_v.bias", kv_dim, 0.0, 0.1);
        }
        if (spec.arch == Arch::Qwen3 || spec.arch == Arch::Qwen3moe || spec.arch == Arch::Gemma3) {
            vector(p + "attn_q_norm.weight", uint64_t(s.head_dim), 1.0, 0.05);
            vector(p + "attn_k_norm.weight", uint64_t(s.head_dim), 1.0, 0.05);
        }
        matrix(p + "attn_output.weight", i, q_dim, embd, 0.5 / std::sqrt(double(q_dim)));
        if (spec.arch == Arch::GptOss) {
            vector(p + "attn_output.bias", embd, 0.0, 0.1);
            vector(p + "attn_sinks.weight", uint64_t(s.n_head), 1.0, 1.0);
            // gpt-oss's FFN norm: llama.cpp's attn_post_norm, in the FFN norm's place.
            vector(p + "post_attention_norm.weight", embd, 1.0, 0.05);
            matrix(p + "ffn_gate_inp.weight", i, embd, n_expert, unit);
            vector(p + "ffn_gate_inp.bias", n_expert, 0.0, 0.1);
            experts(p + "ffn_gate_exps.weight", i, embd, expert_ff, 4.0 * unit);
            plans.push_back({p + "ffn_gate_exps.bias", DType::F32, {expert_ff, n_expert}, 0.0, 0.5});
            experts(p + "ffn_up_exps.weight", i, embd, expert_ff, 4.0 * unit);
            plans.push_back({p + "ffn_up_exps.bias", DType::F32, {expert_ff, n_expert}, 0.0, 0.5});
            experts(p + "ffn_down_exps.weight", i, expert_ff, embd, 0.125 / std::sqrt(double(expert_ff)));
            plans.push_back({p + "ffn_down_exps.bias", DType::F32, {embd, n_expert}, 0.0, 0.1});
            continue;
        }
        if (spec.arch == Arch::Gemma3) vector(p + "post_attention_norm.weight", embd, 1.0, 0.05);
        vector(p + "ffn_norm.weight", embd, 1.0, 0.05);
        if (spec.arch == Arch::Qwen3moe) {
            matrix(p + "ffn_gate_inp.weight", i, embd, n_expert, unit);
            experts(p + "ffn_gate_exps.weight", i, embd, expert_ff, unit);
            experts(p + "ffn_up_exps.weight", i, embd, expert_ff, unit);
            experts(p + "ffn_down_exps.weight", i, expert_ff, embd, 0.5 / std::sqrt(double(expert_ff)));
            continue;
        }
        if (spec.arch == Arch::Phi3) {
            matrix(p + "ffn_up.weight", i, embd, 2 * ff, unit);
        } else {
            matrix(p + "ffn_gate.weight", i, embd, ff, unit);
            matrix(p + "ffn_up.weight", i, embd, ff, unit);
        }
        matrix(p + "ffn_down.weight", i, ff, embd, 0.5 / std::sqrt(double(ff)));
        if (spec.arch == Arch::Gemma3) vector(p + "post_ffw_norm.weight", embd, 1.0, 0.05);
    }
    return plans;
}

void add_metadata(test::GgufWriter& w, const SyntheticSpec& spec) {
    const Shape& s = spec.shape;
    const std::string arch(arch_name(spec.arch));
    const std::string a = arch + ".";
    uint32_t file_type = spec.types.mxfp4_moe ? kFileTypeMxfp4Moe : kFileTypeQ4_K_M;
    for (const auto& t : kTypes)
        if (!spec.types.q4_k_m && !spec.types.mxfp4_moe && t.type == spec.types.base) file_type = t.file_type;
    w.add("general.architecture", str(arch));
    w.add("general.name", str("synthetic " + s.name + " " + spec.types.name + " seed " + std::to_string(spec.seed)));
    w.add("general.file_type", u32(file_type));
    w.add(a + "block_count", u32(uint32_t(s.n_layer)));
    w.add(a + "context_length", u32(uint32_t(s.n_ctx_train) * uint32_t(std::max(1, s.yarn_factor))));
    w.add(a + "embedding_length", u32(uint32_t(s.n_embd)));
    w.add(a + "feed_forward_length", u32(uint32_t(s.n_ff)));
    w.add(a + "attention.head_count", u32(uint32_t(s.n_head)));
    w.add(a + "attention.head_count_kv", u32(uint32_t(s.n_head_kv)));
    w.add(a + "attention.key_length", u32(uint32_t(s.head_dim)));
    w.add(a + "attention.value_length", u32(uint32_t(s.head_dim)));
    w.add(a + "rope.dimension_count", u32(uint32_t(s.rope_dims > 0 ? s.rope_dims : s.head_dim)));
    w.add(a + "rope.freq_base", f32(spec.arch == Arch::Gemma3 ? 1e6f : float(s.rope_base)));
    w.add(a + "attention.layer_norm_rms_epsilon", f32(spec.arch == Arch::Llama ? 1e-5f : 1e-6f));
    if (spec.arch == Arch::Gemma3) {
        // The local layers' RoPE base is llama.cpp's default (no rope.freq_base_swa key).
        w.add(a + "rope.scaling.type", str("linear"));
        w.add(a + "rope.scaling.factor", f32(8.0f));
        w.add(a + "attention.sliding_window", u32(uint32_t(s.sliding_window)));
    }
    if (spec.arch == Arch::GptOss) w.add(a + "attention.sliding_window", u32(uint32_t(s.sliding_window)));
    if (spec.arch == Arch::Qwen3moe || spec.arch == Arch::GptOss) {
        w.add(a + "expert_count", u32(uint32_t(s.n_expert)));
        w.add(a + "expert_used_count", u32(uint32_t(s.n_expert_used)));
        w.add(a + "expert_feed_forward_length", u32(uint32_t(s.expert_width())));
    }
    if (s.longrope_ctx > 0) {
        // As llama.cpp's converter writes a Phi-3 128k file: no scaling type.
        const double scale = double(s.n_ctx_train) / s.longrope_ctx;
        w.add(a + "rope.scaling.original_context_length", u32(uint32_t(s.longrope_ctx)));
        w.add(a + "rope.scaling.attn_factor", f32(float(std::sqrt(1.0 + std::log(scale) / std::log(double(s.longrope_ctx))))));
    }
    if (s.yarn_factor > 0) {
        w.add(a + "rope.scaling.type", str("yarn"));
        w.add(a + "rope.scaling.factor", f32(float(s.yarn_factor)));
        w.add(a + "rope.scaling.original_context_length", u32(uint32_t(s.n_ctx_train)));
        if (spec.arch == Arch::Mistral3) {
            w.add(a + "rope.scaling.yarn_beta_fast", f32(32.0f));
            w.add(a + "rope.scaling.yarn_beta_slow", f32(1.0f));
            w.add(a + "rope.scaling.yarn_log_multiplier", f32(1.0f));
            w.add(a + "attention.temperature_scale", f32(0.1f));
        }
    }
    add_vocabulary(w, s.n_vocab);
}

// Tensor data is drawn in chunks of about this many bytes, each from its own seed, so
// that threads can share a tensor and the bytes do not depend on how they do.
constexpr uint64_t kChunkBytes = 1 << 20;
// Chunks drawn between two writes: bounds the memory in use.
constexpr uint64_t kChunksPerSlab = 64;

class Output {
public:
    explicit Output(const std::filesystem::path& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
        if (!f_) fail("cannot create");
    }
    ~Output() {
        if (f_) std::fclose(f_);
    }
    void write(const uint8_t* data, size_t n) {
        if (n && std::fwrite(data, 1, n, f_) != n) fail("cannot write");
    }
    void close() {
        const int rc = std::fclose(f_);
        f_ = nullptr;
        if (rc != 0) fail("cannot write");
    }

private:
    [[noreturn]] void fail(const char* what) const {
        throw std::runtime_error(std::string(what) + " '" + path_.string() + "': " + std::strerror(errno));
    }
    std::filesystem::path path_;
    std::FILE* f_;
};

// Draws chunks [first, last) of one tensor into `buf` with `threads` threads.
void draw_chunks(const Plan& p, uint64_t seed, uint64_t tensor_index, uint64_t blocks_per_chunk, uint64_t first,
                 uint64_t last, int threads, uint8_t* buf) {
    const size_t block_bytes = dtype_info(p.type).block_bytes;
    std::atomic<uint64_t> next{first};
    auto work = [&] {
        for (uint64_t c = next++; c < last; c = next++) {
            const uint64_t b0 = c * blocks_per_chunk;
            const uint64_t nb = std::min(blocks_per_chunk, p.n_blocks() - b0);
            Rng rng(chunk_seed(seed, tensor_index, c));
            fill_random_blocks(p.type, p.mean, p.sigma, rng, buf + (b0 - first * blocks_per_chunk) * block_bytes,
                               int64_t(nb));
        }
    };
    const int n = int(std::min<uint64_t>(uint64_t(threads), last - first));
    std::vector<std::thread> pool;
    for (int t = 1; t < n; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
}

} // namespace

std::optional<Shape> shape_named(std::string_view name) {
    const std::string n = lower(name);
    for (const auto& s : shapes())
        if (s.name == n) return s;
    return std::nullopt;
}

std::vector<std::string> shape_names() {
    std::vector<std::string> out;
    for (const auto& s : shapes()) out.push_back(s.name);
    return out;
}

constexpr std::pair<Arch, std::string_view> kArchNames[] = {
    {Arch::Llama, "llama"}, {Arch::Qwen2, "qwen2"}, {Arch::Qwen3, "qwen3"}, {Arch::Gemma3, "gemma3"},
    {Arch::Smollm3, "smollm3"}, {Arch::Phi3, "phi3"}, {Arch::Qwen3moe, "qwen3moe"}, {Arch::Mistral3, "mistral3"},
    {Arch::GptOss, "gpt-oss"}};

std::string_view arch_name(Arch arch) {
    for (const auto& [a, name] : kArchNames)
        if (a == arch) return name;
    return "llama";
}

std::optional<Arch> arch_named(std::string_view name) {
    const std::string n = lower(name);
    for (const auto& [a, known] : kArchNames)
        if (known == n) return a;
    return std::nullopt;
}

std::optional<WeightTypes> weight_types_named(std::string_view name) {
    const std::string n = lower(name);
    if (n == "q4_k_m") return WeightTypes{n, DType::Q4_K, true};
    if (n == "mxfp4_moe") return WeightTypes{n, DType::F32, false, true};
    for (const auto& t : kTypes)
        if (n == t.name) return WeightTypes{n, t.type, false};
    return std::nullopt;
}

std::vector<std::string> weight_type_names() {
    std::vector<std::string> out;
    for (const auto& t : kTypes) out.emplace_back(t.name);
    out.emplace_back("q4_k_m");
    out.emplace_back("mxfp4_moe");
    return out;
}

DType matrix_type(const WeightTypes& types, std::string_view tensor, int layer, int n_layer, int64_t cols,
                  bool tied) {
    DType t = types.base;
    if (types.mxfp4_moe && tensor.ends_with("_exps.weight")) return DType::MXFP4;
    if (types.q4_k_m) {
        const bool is_output = tensor == "output.weight" || (tied && tensor == "token_embd.weight");
        const bool layer_more_bits = (tensor.ends_with("attn_v.weight") || tensor.ends_with("ffn_down.weight")) &&
                                     more_bits(layer, n_layer);
        if (is_output || layer_more_bits) t = DType::Q6_K;
    }
    if (is_k_quant(t) && cols % QK_K != 0)
        t = t == DType::Q4_K   ? DType::Q5_0
            : t == DType::Q5_K ? DType::Q5_1
            : t == DType::Q6_K ? DType::Q8_0
                               : DType::IQ4_NL;  // Q2_K, Q3_K, IQ4_XS, as llama.cpp falls back
    return t;
}

void validate(const SyntheticSpec& spec) {
    const Shape& s = spec.shape;
    auto fail = [&](const std::string& what) {
        throw std::invalid_argument("synthetic model " + s.name + ": " + what);
    };
    for (auto [value, what] : {std::pair{s.n_layer, "layers"}, {s.n_embd, "embedding size"}, {s.n_head, "heads"},
                               {s.n_head_kv, "kv heads"}, {s.head_dim, "head size"}, {s.n_ff, "feed-forward size"}})
        if (value < 1 || value > (1 << 20)) fail(std::string(what) + " " + std::to_string(value) + " is outside 1..2^20");
    if (s.n_head % s.n_head_kv != 0)
        fail(std::to_string(s.n_head) + " heads are not a multiple of " + std::to_string(s.n_head_kv) + " kv heads");
    if (s.head_dim % 2 != 0) fail("head size " + std::to_string(s.head_dim) + " is odd (RoPE rotates pairs)");
    // Every matrix row (n_embd, n_ff or n_head * head_dim long) must hold whole blocks of
    // 32; K-quant rows that do not hold whole blocks of 256 fall back (matrix_type).
    const int64_t q_dim = int64_t(s.n_head) * s.head_dim;
    for (auto [cols, what] : {std::pair{int64_t(s.n_embd), "embedding size"}, {int64_t(s.n_ff), "feed-forward size"},
                              {q_dim, "heads x head size"}})
        if (cols % 32 != 0) fail(std::string(what) + " " + std::to_string(cols) + " is not a multiple of 32");
    if (s.n_vocab < kMinVocab || s.n_vocab > kMaxVocab)
        fail("vocabulary " + std::to_string(s.n_vocab) + " is outside " + std::to_string(kMinVocab) + ".." +
             std::to_string(kMaxVocab));
    if (spec.threads < 0) fail("negative thread count");
    if (s.sliding_window < 1) fail("sliding window " + std::to_string(s.sliding_window) + " is not positive");
    if (s.yarn_factor > 0 && spec.arch == Arch::Gemma3) fail("YaRN scaling on gemma3 (it scales linearly by 8)");
    if (s.rope_dims > 0 && (spec.arch != Arch::Phi3 || s.rope_dims > s.head_dim || s.rope_dims % 2 != 0))
        fail("rotary dimensions " + std::to_string(s.rope_dims) + ": only phi3 rotates part of a head (an even part)");
    if (spec.arch == Arch::Phi3 && q_dim != s.n_embd) fail("phi3 needs heads x head size = embedding size");
    if (s.longrope_ctx > 0 && (spec.arch != Arch::Phi3 || s.yarn_factor > 0 || s.longrope_ctx >= s.n_ctx_train))
        fail("LongRoPE over " + std::to_string(s.longrope_ctx) +
             " positions: phi3 only, without YaRN, below the trained context " + std::to_string(s.n_ctx_train));
    if (spec.arch == Arch::GptOss && s.tied) fail("gpt-oss has a separate output (use --untied)");
    if (spec.types.mxfp4_moe && spec.arch != Arch::Qwen3moe && spec.arch != Arch::GptOss)
        fail("mxfp4_moe needs an architecture with experts (qwen3moe, gpt-oss)");
    if (spec.arch == Arch::Qwen3moe || spec.arch == Arch::GptOss) {
        if (s.n_expert < 1 || s.n_expert > 1024) fail("expert count " + std::to_string(s.n_expert) + " is outside 1..1024");
        if (s.n_expert_used < 1 || s.n_expert_used > s.n_expert)
            fail(std::to_string(s.n_expert_used) + " experts used of " + std::to_string(s.n_expert));
        if (s.expert_width() % 32 != 0)
            fail("expert feed-forward size " + std::to_string(s.expert_width()) + " is not a multiple of 32");
    }
}

WriteResult write_synthetic_model(const SyntheticSpec& spec, const std::filesystem::path& path) {
    validate(spec);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Plan> plans = plan_tensors(spec);
    test::GgufWriter w;
    add_metadata(w, spec);
    for (const auto& p : plans) {
        test::TestTensor t;
        t.name = p.name;
        t.type = uint32_t(p.type);
        t.dims = p.dims;
        t.streamed_bytes = p.n_bytes();
        w.add_tensor(std::move(t));
    }
    const int threads = spec.threads > 0 ? spec.threads : int(std::max(1u, std::thread::hardware_concurrency()));

    const std::filesystem::path partial = path.string() + ".partial";
    WriteResult result;
    try {
        Output out(partial);
        const std::vector<uint8_t> header = w.header_bytes();
        out.write(header.data(), header.size());
        result.bytes = header.size();
        std::vector<uint8_t> buf;
        for (size_t k = 0; k < plans.size(); ++k) {
            const Plan& p = plans[k];
            const size_t block_bytes = dtype_info(p.type).block_bytes;
            const uint64_t blocks_per_chunk = std::max<uint64_t>(1, kChunkBytes / block_bytes);
            const uint64_t n_chunks = (p.n_blocks() + blocks_per_chunk - 1) / blocks_per_chunk;
            for (uint64_t c = 0; c < n_chunks; c += kChunksPerSlab) {
                const uint64_t last = std::min(n_chunks, c + kChunksPerSlab);
                const uint64_t bytes = (std::min(p.n_blocks(), last * blocks_per_chunk) - c * blocks_per_chunk) * block_bytes;
                buf.resize(bytes);
                draw_chunks(p, spec.seed, k, blocks_per_chunk, c, last, threads, buf.data());
                out.write(buf.data(), bytes);
            }
            result.bytes += p.n_bytes();
            if (k + 1 < plans.size()) {  // padding to the next tensor's aligned offset
                const uint64_t pad = (w.alignment - p.n_bytes() % w.alignment) % w.alignment;
                const uint8_t zeros[64] = {};
                out.write(zeros, size_t(pad));
                result.bytes += pad;
            }
        }
        out.close();
        std::filesystem::rename(partial, path);
    } catch (...) {
        std::error_code ignored;
        std::filesystem::remove(partial, ignored);
        throw;
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace arbor::synth
