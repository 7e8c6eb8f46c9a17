// Model::load: reads the configuration from GGUF metadata and binds every weight
// tensor, checking shapes and types so that the forward pass never sees a surprise.
#include "arbor/model.h"

#include "arbor/kernels/quant.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace arbor {
namespace {

const char* const kSupported = "llama, qwen2, qwen3, qwen3moe, gemma3, smollm3, phi3, mistral3, gpt-oss";

bool supported(const std::string& arch) {
    return arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3" ||
           arch == "smollm3" || arch == "phi3" || arch == "mistral3" || arch == "gpt-oss";
}

// llama.cpp's LLAMA_MAX_EXPERTS.
constexpr uint64_t kMaxExperts = 1024;

// The rotated pair whose frequency turns n_rot times over n_ctx_orig positions
// (ggml_rope_yarn_corr_dim).
float yarn_corr_dim(int32_t n_dims, int32_t n_ctx_orig, float n_rot, float base) {
    return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * float(M_PI))) / (2.0f * std::log(base));
}

// Per pair i: 1 below the ramp (the unscaled frequency), 0 above it (the scaled one),
// linear between (ggml's rope_yarn_ramp with ggml_rope_yarn_corr_dims' bounds), for
// layers rotating at `base`.
std::vector<float> yarn_ramp(const ModelConfig& c, float base) {
    const int32_t n_dims = c.n_rot;
    const float low = std::max(0.0f, std::floor(yarn_corr_dim(n_dims, c.rope_yarn_orig_ctx, c.rope_yarn_beta_fast, base)));
    const float high = std::min(float(n_dims - 1), std::ceil(yarn_corr_dim(n_dims, c.rope_yarn_orig_ctx, c.rope_yarn_beta_slow, base)));
    std::vector<float> ramp(size_t(n_dims / 2));
    for (size_t i = 0; i < ramp.size(); ++i) {
        const float y = (float(i) - low) / std::max(0.001f, high - low);
        ramp[i] = 1.0f - std::min(1.0f, std::max(0.0f, y));
    }
    return ramp;
}

class Binder {
public:
    explicit Binder(const GgufFile& file) : file_(file) {}

    const GgufTensor* find(const std::string& name) const { return file_.find_tensor(name); }

    const GgufTensor& require(const std::string& name) const {
        const GgufTensor* t = find(name);
        if (!t) throw Error("model is missing tensor '" + name + "'");
        return *t;
    }

    static void check_shape(const GgufTensor& t, int64_t cols, int64_t rows) {
        const bool ok = t.dims.size() <= 2 && t.cols() == cols && t.rows() == rows;
        if (!ok)
            throw Error("tensor '" + t.name + "' has shape [" + dims_text(t) + "], expected [" +
                        std::to_string(cols) + (rows > 1 ? ", " + std::to_string(rows) : "") + "]");
    }

    TensorView matrix(const std::string& name, int64_t cols, int64_t rows) const {
        const GgufTensor& t = require(name);
        check_shape(t, cols, rows);
        return weight_view(t);
    }

    // n matrices of rows x cols stacked in one [cols, rows, n] tensor (llama.cpp's
    // ffn_*_exps), viewed as one matrix of n * rows rows.
    TensorView stack(const std::string& name, int64_t cols, int64_t rows, int64_t n) const {
        const GgufTensor& t = require(name);
        if (t.dims != std::vector<int64_t>{cols, rows, n})
            throw Error("tensor '" + name + "' has shape [" + dims_text(t) + "], expected [" + std::to_string(cols) +
                        ", " + std::to_string(rows) + ", " + std::to_string(n) + "]");
        return weight_view(t);
    }

    std::vector<float> vector(const std::string& name, int64_t n, bool required = true) const {
        const GgufTensor* t = required ? &require(name) : find(name);
        if (!t) return {};
        check_shape(*t, n, 1);
        return floats(*t, n, 1);
    }

    // count vectors of n values in one [n, count] tensor (an expert's bias each), in order.
    std::vector<float> vectors(const std::string& name, int64_t n, int64_t count) const {
        const GgufTensor& t = require(name);
        if (t.dims != std::vector<int64_t>{n, count})
            throw Error("tensor '" + name + "' has shape [" + dims_text(t) + "], expected [" + std::to_string(n) +
                        ", " + std::to_string(count) + "]");
        return floats(t, n, count);
    }

private:
    static std::vector<float> floats(const GgufTensor& t, int64_t n, int64_t rows) {
        if (n % dtype_info(t.type).block_size != 0)
            throw Error("tensor '" + t.name + "' of type " + std::string(dtype_name(t.type)) +
                        " does not hold whole blocks per row");
        std::vector<float> out(static_cast<size_t>(n * rows));
        for (int64_t r = 0; r < rows; ++r)
            dequantize_row(t.type, t.data + r * row_bytes(t.type, n), out.data() + r * n, n);
        return out;
    }

    static TensorView weight_view(const GgufTensor& t) {
        if (!dtype_info(t.type).weight_type)
            throw Error("tensor '" + t.name + "' has unsupported type " + std::string(dtype_name(t.type)));
        return TensorView{t.type, t.cols(), t.rows(), t.data, row_bytes(t.type, t.cols())};
    }

    static std::string dims_text(const GgufTensor& t) {
        std::string s;
        for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
        return s;
    }

    const GgufFile& file_;
};

// Rows [first, first + n) of a matrix: a fused tensor's part.
TensorView rows_of(const TensorView& t, int64_t first, int64_t n) {
    return TensorView{t.type, t.cols, n, t.row(first), t.row_stride};
}

int32_t positive(const GgufFile& file, const std::string& key, std::optional<uint64_t> fallback = {}) {
    std::optional<uint64_t> v = file.get_uint(key);
    if (!v) v = fallback;
    if (!v) throw Error("model metadata lacks '" + key + "'");
    if (*v == 0 || *v > (1u << 24)) throw Error("model metadata '" + key + "' has invalid value " + std::to_string(*v));
    return int32_t(*v);
}

// Which layers of n_layer slide: the metadata's sliding_window_pattern, either one flag
// per layer or a period N whose last layer is global (llama.cpp's reading; without the
// key the architecture's period: gemma3 6, gpt-oss 2).
std::vector<bool> local_layer_pattern(const GgufFile& file, const std::string& key, int32_t n_layer,
                                      uint64_t default_period) {
    std::vector<bool> local(static_cast<size_t>(n_layer));
    const GgufValue* v = file.find(key);
    if (const auto* flags = v ? v->as_array() : nullptr) {
        if (flags->size() != size_t(n_layer))
            throw Error("model metadata '" + key + "' has " + std::to_string(flags->size()) + " entries for " +
                        std::to_string(n_layer) + " layers");
        for (size_t i = 0; i < flags->size(); ++i) {
            const auto flag = (*flags)[i].as_bool();
            if (!flag) throw Error("model metadata '" + key + "' is not an array of booleans");
            local[i] = *flag;
        }
        return local;
    }
    const uint64_t period = v ? file.get_uint(key).value_or(0) : default_period;
    for (int32_t i = 0; i < n_layer; ++i) local[size_t(i)] = period == 0 || uint64_t(i) % period < period - 1;
    return local;
}

// Gemma 3's differences from llama, as llama.cpp reads them (src/models/gemma3.cpp). Its
// RMSNorm multiplies by (1 + w); GGUF files hold 1 + w already (the converter adds it),
// so the norms are applied as stored.
void read_gemma3(const GgufFile& file, ModelConfig& c) {
    const std::string a = c.architecture + ".";
    c.embd_scale = std::sqrt(float(c.n_embd));
    c.ffn_activation = ModelConfig::Activation::GeluTanh;
    // Gemma 3 27B (62 layers) scales queries by n_embd / n_head instead of the head size.
    if (c.n_layer == 62) c.attn_scale = 1.0f / std::sqrt(float(c.n_embd / c.n_head));
    c.final_logit_softcap = float(file.get_float(a + "final_logit_softcapping").value_or(0.0));
    if (!(c.final_logit_softcap >= 0.0f) || !std::isfinite(c.final_logit_softcap))
        throw Error("invalid final_logit_softcapping " + std::to_string(c.final_logit_softcap));
    // Gemma 2 capped attention scores; Gemma 3 does not, and llama.cpp's gemma3 ignores
    // the key. A file carrying it is not one we know how to run.
    if (file.find(a + "attn_logit_softcapping"))
        throw Error("attention logit soft-capping (" + a + "attn_logit_softcapping) is not supported");
    const uint64_t window = file.get_uint(a + "attention.sliding_window").value_or(0);
    if (window == 0) return;
    if (window > (1u << 24)) throw Error("invalid sliding window " + std::to_string(window));
    c.sliding_window = int32_t(window);
    c.local_layers = local_layer_pattern(file, a + "attention.sliding_window_pattern", c.n_layer, 6);
    c.rope_base_local = float(file.get_float(a + "rope.freq_base_swa").value_or(10000.0));
    if (!(c.rope_base_local > 0.0f)) throw Error("invalid rope.freq_base_swa in metadata");
}

// Mistral 3 (Ministral 3) as llama.cpp reads it (src/models/mistral3.cpp): llama's
// tensors and adjacent-pair RoPE, YaRN's ramp bounds and log multiplier from the
// metadata, and the attention temperature over rope.scaling.original_context_length
// positions. Its routed-experts variant is refused.
void read_mistral3(const GgufFile& file, ModelConfig& c) {
    const std::string a = c.architecture + ".";
    c.rope_yarn_beta_fast = float(file.get_float(a + "rope.scaling.yarn_beta_fast").value_or(32.0));
    c.rope_yarn_beta_slow = float(file.get_float(a + "rope.scaling.yarn_beta_slow").value_or(1.0));
    c.rope_yarn_log_mul = float(file.get_float(a + "rope.scaling.yarn_log_multiplier").value_or(0.0));
    if (!std::isfinite(c.rope_yarn_beta_fast) || !std::isfinite(c.rope_yarn_beta_slow) ||
        !std::isfinite(c.rope_yarn_log_mul) || !(c.rope_yarn_beta_fast > 0.0f) || !(c.rope_yarn_beta_slow > 0.0f))
        throw Error("invalid YaRN beta or log multiplier in metadata");
    c.attn_temp_scale = float(file.get_float(a + "attention.temperature_scale").value_or(0.0));
    if (!std::isfinite(c.attn_temp_scale)) throw Error("invalid attention.temperature_scale in metadata");
    if (c.attn_temp_scale != 0.0f)
        c.attn_temp_floor = positive(file, a + "rope.scaling.original_context_length", uint64_t(c.n_ctx_train));
    if (file.get_uint(a + "expert_count").value_or(0) > 0)
        throw Error("mistral3 with routed experts (" + a + "expert_count) is not supported");
}

// The routing of qwen3moe and gpt-oss as llama.cpp runs them (src/models/qwen3moe.cpp,
// openai-moe.cpp): qwen3moe takes the top expert_used_count of a softmax over all
// experts, their weights normalised to sum 1 whatever expert_weights_norm says; gpt-oss
// the top logits, weighted by a softmax over those alone (already summing to 1, and
// llama.cpp reads neither expert_weights_norm nor expert_gating_func for it). No expert
// groups or shared experts. Keys that would ask for another routing are refused rather
// than ignored.
void read_experts(const GgufFile& file, ModelConfig& c) {
    const std::string a = c.architecture + ".";
    c.n_expert = positive(file, a + "expert_count");
    c.n_expert_used = positive(file, a + "expert_used_count");
    if (uint64_t(c.n_expert) > kMaxExperts)
        throw Error("expert_count " + std::to_string(c.n_expert) + " exceeds " + std::to_string(kMaxExperts));
    if (c.n_expert_used > c.n_expert)
        throw Error("expert_used_count " + std::to_string(c.n_expert_used) + " exceeds expert_count " +
                    std::to_string(c.n_expert));
    // llama.cpp also reads a per-layer array here (get_key_or_arr); experts of different
    // widths per layer are not supported.
    if (const GgufValue* width = file.find(a + "expert_feed_forward_length"); width && width->as_array())
        throw Error("per-layer expert widths (" + a + "expert_feed_forward_length as an array) are not supported");
    c.n_ff_exp = positive(file, a + "expert_feed_forward_length", uint64_t(c.n_ff / c.n_expert_used));
    if (file.get_uint(a + "expert_group_count").value_or(0) > 1)
        throw Error("expert groups (" + a + "expert_group_count) are not supported");
    if (file.get_uint(a + "expert_shared_count").value_or(0) > 0)
        throw Error("shared experts (" + a + "expert_shared_count) are not supported for " + c.architecture);
    if (const auto scale = file.get_float(a + "expert_weights_scale"); scale && *scale != 0.0 && *scale != 1.0)
        throw Error("scaled expert weights (" + a + "expert_weights_scale " + std::to_string(*scale) +
                    ") are not supported for " + c.architecture);
    if (c.architecture == "gpt-oss") {
        c.expert_gating = ModelConfig::Gating::SoftmaxChosen;
        return;
    }
    if (const GgufValue* norm = file.find(a + "expert_weights_norm"); norm && norm->as_bool() != std::optional(true))
        throw Error("unnormalised expert weights (" + a + "expert_weights_norm false) are not supported for " +
                    c.architecture);
    if (const auto gating = file.get_uint(a + "expert_gating_func"); gating && *gating != 1)
        throw Error("expert gating function " + std::to_string(*gating) + " (" + a +
                    "expert_gating_func) is not supported: only softmax (1)");
}

// gpt-oss as llama.cpp reads it (its openai-moe architecture, src/models/openai-moe.cpp):
// a sliding window (required) on the layers of sliding_window_pattern (default period 2:
// even layers slide, odd ones are global), the local layers rotating at rope.freq_base_swa
// (default: the global base) with the global layers' scaling; learned attention sinks;
// routed experts with the clamped SwiGLU. Its biases and sinks are bound in Model::load.
void read_gpt_oss(const GgufFile& file, ModelConfig& c) {
    const std::string a = c.architecture + ".";
    c.sliding_window = positive(file, a + "attention.sliding_window");
    c.local_layers = local_layer_pattern(file, a + "attention.sliding_window_pattern", c.n_layer, 2);
    c.rope_base_local = float(file.get_float(a + "rope.freq_base_swa").value_or(c.rope_base));
    if (!(c.rope_base_local > 0.0f) || !std::isfinite(c.rope_base_local))
        throw Error("invalid rope.freq_base_swa in metadata");
    c.rope_scaled_local = true;
    c.attn_sinks = true;
    c.ffn_activation = ModelConfig::Activation::SwigluOai;
    read_experts(file, c);
}

// Phi-3's LongRoPE as llama.cpp reads it: the factor tensors rope_factors_long.weight and
// rope_factors_short.weight (one file-wide pair; either may be absent, and then that
// context size rotates without factors), chosen by the context against
// rope.scaling.original_context_length (default: the trained context). Other
// architectures' graphs in llama.cpp take no such tensors; they are refused there.
void read_longrope(const GgufFile& file, ModelConfig& c) {
    bool any = false;
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        if (file.find_tensor(std::string("blk.0.") + name))
            throw Error(std::string("LongRoPE factors per layer (blk.0.") + name + ") are not supported");
        if (!file.find_tensor(name)) continue;
        if (c.architecture != "phi3")
            throw Error(std::string("LongRoPE factors (") + name + ") are only supported for phi3, not " +
                        c.architecture);
        any = true;
    }
    if (!any) return;
    if (file.find_tensor("rope_freqs.weight"))
        throw Error("both LongRoPE factors and rope_freqs.weight: which divides the frequencies is ambiguous");
    c.rope_long_orig_ctx = positive(file, c.architecture + ".rope.scaling.original_context_length",
                                    uint64_t(c.n_ctx_train));
}

} // namespace

ModelConfig read_model_config(const GgufFile& file) {
    ModelConfig c;
    c.architecture = file.require_string("general.architecture");
    if (!supported(c.architecture))
        throw Error("unsupported model architecture '" + c.architecture + "' (supported: " + kSupported + ")");
    c.name = file.get_string("general.name").value_or(c.architecture);
    const std::string a = c.architecture + ".";
    c.n_layer = positive(file, a + "block_count");
    c.n_embd = positive(file, a + "embedding_length");
    c.n_ff = positive(file, a + "feed_forward_length");
    c.n_head = positive(file, a + "attention.head_count");
    c.n_head_kv = positive(file, a + "attention.head_count_kv", uint64_t(c.n_head));
    if (c.n_head % c.n_head_kv != 0)
        throw Error("attention.head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(c.n_head_kv));
    c.head_dim = positive(file, a + "attention.key_length", uint64_t(c.n_embd / c.n_head));
    c.n_rot = positive(file, a + "rope.dimension_count", uint64_t(c.head_dim));
    // Partial rotary (Phi-4-mini rotates 96 of 128) only where the architecture has it:
    // the CUDA backend rotates whole heads.
    const bool partial_ok = c.architecture == "phi3" && c.n_rot < c.head_dim;
    if ((c.n_rot != c.head_dim && !partial_ok) || c.n_rot % 2 != 0 || c.head_dim % 2 != 0)
        throw Error("partial or odd rotary dimensions (" + std::to_string(c.n_rot) + " of head size " +
                    std::to_string(c.head_dim) + ") are not supported for " + c.architecture);
    c.n_ctx_train = positive(file, a + "context_length", 4096);
    c.rms_eps = float(file.get_float(a + "attention.layer_norm_rms_epsilon").value_or(1e-5));
    c.rope_base = float(file.get_float(a + "rope.freq_base").value_or(10000.0));
    // As in llama.cpp, the reference for GGUF semantics: an absent type means linear, the
    // factor may sit under the older key rope.scale_linear, and 0 means unscaled.
    const std::string scaling = file.get_string(a + "rope.scaling.type").value_or("linear");
    if (scaling == "linear" || scaling == "yarn") {
        std::optional<double> factor = file.get_float(a + "rope.scaling.factor");
        if (!factor) factor = file.get_float(a + "rope.scale_linear");
        if (factor && *factor != 0.0) {
            if (!(*factor > 0.0) || !std::isfinite(*factor))
                throw Error("invalid RoPE scaling factor " + std::to_string(*factor));
            c.rope_freq_scale = float(1.0 / *factor);
        }
    } else if (scaling != "none") {
        throw Error("RoPE scaling type '" + scaling + "' is not supported (supported: none, linear, yarn)");
    }
    if (scaling == "yarn") {
        // Gemma 3's local layers would need YaRN's ramp at their own base; no such file is known.
        if (c.architecture == "gemma3") throw Error("YaRN RoPE scaling is not supported for gemma3");
        c.rope_yarn = true;
        c.rope_yarn_orig_ctx = positive(file, a + "rope.scaling.original_context_length", uint64_t(c.n_ctx_train));
    }
    c.rope_attn_factor = float(file.get_float(a + "rope.scaling.attn_factor").value_or(1.0));
    if (!(c.rope_attn_factor > 0.0f) || !std::isfinite(c.rope_attn_factor))
        throw Error("invalid rope.scaling.attn_factor " + std::to_string(c.rope_attn_factor));
    c.rope_neox = c.architecture != "llama" && c.architecture != "smollm3" && c.architecture != "mistral3";
    // GGUF files carry no key for it: llama.cpp fixes SmolLM3's NoPE interval at 4, as
    // the model's config.json (no_rope_layer_interval) has it.
    if (c.architecture == "smollm3") c.no_rope_interval = 4;
    read_longrope(file, c);
    if (!(c.rms_eps > 0.0f) || !(c.rope_base > 0.0f)) throw Error("invalid rms epsilon or rope base in metadata");
    if (c.architecture == "gemma3") read_gemma3(file, c);
    if (c.architecture == "qwen3moe") read_experts(file, c);
    if (c.architecture == "mistral3") read_mistral3(file, c);
    if (c.architecture == "gpt-oss") read_gpt_oss(file, c);
    // Routed experts in a file of a dense architecture (Mixtral's llama files): refused by
    // name rather than failing later on a dense FFN tensor the file lacks.
    if (!c.has_experts() && file.get_uint(a + "expert_count").value_or(0) > 0)
        throw Error(c.architecture + " with routed experts (" + a + "expert_count) is not supported");
    // Mistral 7B's llama files carry a sliding window that llama.cpp does not apply (nor
    // does Arbor, to stay with it): within it the two agree with the model's makers.
    if (c.architecture == "llama")
        if (const uint64_t window = file.get_uint(a + "attention.sliding_window").value_or(0);
            window > 0 && window < uint64_t(c.n_ctx_train))
            c.load_warning = "the model was trained to attend to its last " + std::to_string(window) +
                             " tokens only; Arbor, like llama.cpp, attends to the whole context, so replies past " +
                             std::to_string(window) + " tokens may differ from the original model's";
    return c;
}


std::unique_ptr<Model> Model::load(const std::filesystem::path& path) {
    std::unique_ptr<Model> m(new Model());
    m->file_ = GgufFile::open(path);
    const GgufFile& file = *m->file_;
    m->config_ = read_model_config(file);
    ModelConfig& c = m->config_;
    m->tokenizer_ = Tokenizer::from_gguf(file);
    m->chat_template_ = file.get_string("tokenizer.chat_template").value_or("");

    Binder bind(file);
    const GgufTensor& embd = bind.require("token_embd.weight");
    c.n_vocab = int32_t(embd.rows());
    if (c.n_vocab != m->tokenizer_->n_vocab())
        spdlog::warn("token_embd has {} rows but the vocabulary has {} tokens", c.n_vocab, m->tokenizer_->n_vocab());
    if (c.n_vocab < m->tokenizer_->n_vocab())
        throw Error("token_embd has fewer rows than the vocabulary has tokens");

    ModelWeights& w = m->weights_;
    const int64_t q_dim = int64_t(c.n_head) * c.head_dim;
    w.token_embd = bind.matrix("token_embd.weight", c.n_embd, c.n_vocab);
    w.output_norm = bind.vector("output_norm.weight", c.n_embd);
    // gpt-oss has no tied variant: llama.cpp requires its output.weight.
    const bool tied = c.architecture != "gpt-oss" && !bind.find("output.weight");
    w.output = tied ? w.token_embd : bind.matrix("output.weight", c.n_embd, c.n_vocab);
    w.layers.resize(size_t(c.n_layer));
    for (int32_t i = 0; i < c.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LayerWeights& l = w.layers[size_t(i)];
        l.attn_norm = bind.vector(p + "attn_norm.weight", c.n_embd);
        // gpt-oss's FFN norm is the tensor named post_attention_norm (llama.cpp's
        // attn_post_norm), applied to the FFN's input like any ffn_norm.
        l.ffn_norm = bind.vector(p + (c.architecture == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight"),
                                 c.n_embd);
        if (c.architecture == "phi3" && bind.find(p + "attn_qkv.weight")) {
            // Phi-3's fused projection: Q's rows, then K's, then V's.
            const TensorView qkv = bind.matrix(p + "attn_qkv.weight", c.n_embd, q_dim + 2 * c.kv_dim());
            l.wq = rows_of(qkv, 0, q_dim);
            l.wk = rows_of(qkv, q_dim, c.kv_dim());
            l.wv = rows_of(qkv, q_dim + c.kv_dim(), c.kv_dim());
        } else {
            l.wq = bind.matrix(p + "attn_q.weight", c.n_embd, q_dim);
            l.wk = bind.matrix(p + "attn_k.weight", c.n_embd, c.kv_dim());
            l.wv = bind.matrix(p + "attn_v.weight", c.n_embd, c.kv_dim());
        }
        l.wo = bind.matrix(p + "attn_output.weight", q_dim, c.n_embd);
        l.bq = bind.vector(p + "attn_q.bias", q_dim, false);
        l.bk = bind.vector(p + "attn_k.bias", c.kv_dim(), false);
        l.bv = bind.vector(p + "attn_v.bias", c.kv_dim(), false);
        if (c.architecture == "gpt-oss") {
            l.bo = bind.vector(p + "attn_output.bias", c.n_embd);
            l.attn_sinks = bind.vector(p + "attn_sinks.weight", c.n_head);
            for (float s : l.attn_sinks)
                if (!std::isfinite(s)) throw Error("tensor '" + p + "attn_sinks.weight' holds a value that is not finite");
        }
        // Biases that llama.cpp's mistral3 adds and Arbor's products here do not.
        if (c.architecture == "mistral3")
            for (const char* bias : {"attn_output.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"})
                if (bind.find(p + bias)) throw Error("tensor '" + p + bias + "' (a bias) is not supported for mistral3");
        if (c.has_experts()) {
            l.ffn_gate_inp = bind.matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert);
            l.gate_exps = bind.stack(p + "ffn_gate_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert);
            l.up_exps = bind.stack(p + "ffn_up_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert);
            l.down_exps = bind.stack(p + "ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert);
            if (c.architecture == "gpt-oss") {
                l.ffn_gate_inp_b = bind.vector(p + "ffn_gate_inp.bias", c.n_expert);
                l.gate_exps_b = bind.vectors(p + "ffn_gate_exps.bias", c.n_ff_exp, c.n_expert);
                l.up_exps_b = bind.vectors(p + "ffn_up_exps.bias", c.n_ff_exp, c.n_expert);
                l.down_exps_b = bind.vectors(p + "ffn_down_exps.bias", c.n_embd, c.n_expert);
            }
        } else if (c.architecture == "phi3") {
            // Fused gate and up, gate's rows first (llama.cpp's swiglu: silu(first half) * second half).
            const TensorView gate_up = bind.matrix(p + "ffn_up.weight", c.n_embd, 2 * int64_t(c.n_ff));
            l.w_gate = rows_of(gate_up, 0, c.n_ff);
            l.w_up = rows_of(gate_up, c.n_ff, c.n_ff);
        } else {
            l.w_gate = bind.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff);
            l.w_up = bind.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff);
        }
        if (!c.has_experts()) l.w_down = bind.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd);
        if (c.architecture == "qwen3" || c.architecture == "qwen3moe" || c.architecture == "gemma3") {
            l.attn_q_norm = bind.vector(p + "attn_q_norm.weight", c.head_dim);
            l.attn_k_norm = bind.vector(p + "attn_k_norm.weight", c.head_dim);
        }
        if (c.architecture == "gemma3") {
            l.attn_post_norm = bind.vector(p + "post_attention_norm.weight", c.n_embd);
            l.ffn_post_norm = bind.vector(p + "post_ffw_norm.weight", c.n_embd);
        }
    }
    w.rope_freq_factors = bind.vector("rope_freqs.weight", c.n_rot / 2, false);
    w.rope_factors_long = bind.vector("rope_factors_long.weight", c.n_rot / 2, false);
    w.rope_factors_short = bind.vector("rope_factors_short.weight", c.n_rot / 2, false);
    for (const auto& [factors, name] : {std::pair{&w.rope_freq_factors, "rope_freqs.weight"},
                                        std::pair{&w.rope_factors_long, "rope_factors_long.weight"},
                                        std::pair{&w.rope_factors_short, "rope_factors_short.weight"}})
        for (float f : *factors)
            if (!(f > 0.0f) || !std::isfinite(f))
                throw Error(std::string("tensor '") + name + "' holds " + std::to_string(f) +
                            ": RoPE frequency divisors must be positive and finite");

    // Sliding-window layers rotate with their own base and, but for gpt-oss's, are
    // never scaled (llama.cpp's rope_freq_scale_train_swa is 1). YaRN blends each pair's
    // scaled and unscaled frequency (ggml's rope_yarn with ext_factor 1) and scales cos/sin.
    const int32_t half = c.n_rot / 2;
    // `divisors`: per-pair frequency divisors (rope_freqs, or LongRoPE's factors), empty for none.
    const auto frequencies = [&](float base, bool scaled, const std::vector<float>& divisors) {
        const std::vector<float> ramp =
            scaled && c.rope_yarn ? yarn_ramp(c, base) : std::vector<float>(size_t(half), 0.0f);
        const double scale = scaled ? c.rope_freq_scale : 1.0;
        std::vector<float> inv_freq(static_cast<size_t>(half));
        for (int32_t i = 0; i < half; ++i) {
            double f = std::pow(double(base), -2.0 * i / c.n_rot);
            if (scaled && !divisors.empty()) f /= divisors[size_t(i)];
            const double mix = ramp[size_t(i)];
            inv_freq[size_t(i)] = float(f * scale * (1.0 - mix) + f * mix);
        }
        return inv_freq;
    };
    // A LongRoPE model's default table is its short contexts' (read_longrope).
    if (c.rope_long_orig_ctx > 0) {
        m->inv_freq_ = frequencies(c.rope_base, true, w.rope_factors_short);
        m->inv_freq_long_ = frequencies(c.rope_base, true, w.rope_factors_long);
    } else {
        m->inv_freq_ = frequencies(c.rope_base, true, w.rope_freq_factors);
    }
    m->mscale_ = m->mscale_local_ = c.rope_attn_factor;
    if (c.rope_yarn) {
        // llama.cpp's context sets its attention factor to get_mscale(factor) / (1 + 0.1
        // ln factor) so that ggml's own 1 + 0.1 ln(factor) leaves cos/sin scaled once.
        // With mistral3's log multiplier m it is get_mscale(factor) / get_mscale(factor, m).
        const float factor = 1.0f / c.rope_freq_scale;
        const auto get_mscale = [&](float mul) { return factor <= 1.0f ? 1.0f : 0.1f * mul * std::log(factor) + 1.0f; };
        const float yarn_attn =
            c.rope_yarn_log_mul != 0.0f ? get_mscale(1.0f) / get_mscale(c.rope_yarn_log_mul) : get_mscale(1.0f);
        m->mscale_ = c.rope_attn_factor * yarn_attn / (1.0f + 0.1f * std::log(factor)) *
                     (1.0f + 0.1f * std::log(1.0f / c.rope_freq_scale));
    }
    if (!c.local_layers.empty()) {
        m->inv_freq_local_ = frequencies(c.rope_base_local, c.rope_scaled_local, w.rope_freq_factors);
        if (c.rope_scaled_local) m->mscale_local_ = m->mscale_;
    }
    spdlog::info("loaded {} ({}): {} layers, {} embd, {} heads ({} kv), vocab {}", c.name, c.architecture,
                 c.n_layer, c.n_embd, c.n_head, c.n_head_kv, c.n_vocab);
    return m;
}

void Model::rope_table(int32_t pos, float* cos_sin, bool local, bool long_factors) const {
    const std::vector<float>& inv_freq = rope_inv_freq(local, long_factors);
    const double mscale = rope_mscale(local);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        const double angle = double(pos) * double(inv_freq[i]);
        cos_sin[2 * i] = float(std::cos(angle) * mscale);
        cos_sin[2 * i + 1] = float(std::sin(angle) * mscale);
    }
}

} // namespace arbor
