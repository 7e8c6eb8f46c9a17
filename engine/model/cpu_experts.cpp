#include "cpu_experts.h"

#include "arbor/kernels/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace arbor {

namespace {

// llama.cpp clamps the chosen weights' sum to the smallest normal F16 before dividing.
constexpr float kMinWeightSum = 6.103515625e-5f;

// gpt-oss's gated activation as ggml computes it (ggml_swiglu_oai with llama.cpp's alpha
// and limit): gate = min(gate, 7) * sigmoid(1.702 min(gate, 7)) * (clamp(up, -7, 7) + 1).
constexpr float kOaiAlpha = 1.702f;
constexpr float kOaiLimit = 7.0f;

void swiglu_oai(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float x = std::min(gate[i], kOaiLimit);
        const float y = std::clamp(up[i], -kOaiLimit, kOaiLimit);
        gate[i] = x / (1.0f + std::exp(kOaiAlpha * -x)) * (y + 1.0f);
    }
}

// Expert e's slice of a stack of per-expert biases (empty: none).
const float* expert_bias(const std::vector<float>& biases, int64_t width, int32_t e) {
    return biases.empty() ? nullptr : biases.data() + int64_t(e) * width;
}

} // namespace

void CpuExperts::route(float* router_logits, int64_t rows) {
    const int32_t n = cfg_.n_expert, k = cfg_.n_expert_used;
    const bool softmax_chosen = cfg_.expert_gating == ModelConfig::Gating::SoftmaxChosen;
    rows_ = rows;
    by_expert_.resize(size_t(n));
    for (auto& list : by_expert_) list.clear();
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::vector<float> weights(static_cast<size_t>(k));
    for (int64_t t = 0; t < rows; ++t) {
        float* p = router_logits + t * n;
        if (!softmax_chosen) {
            const float top = *std::max_element(p, p + n);
            double sum = 0.0;
            for (int32_t e = 0; e < n; ++e) sum += (p[e] = std::exp(p[e] - top));
            for (int32_t e = 0; e < n; ++e) p[e] = float(p[e] / sum);
        }
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        for (int32_t j = 0; j < k; ++j) weights[size_t(j)] = p[order[size_t(j)]];
        if (softmax_chosen) {
            softmax(weights.data(), k);
        } else {
            float chosen_sum = 0.0f;
            for (float w : weights) chosen_sum += w;
            chosen_sum = std::max(chosen_sum, kMinWeightSum);
            for (float& w : weights) w /= chosen_sum;
        }
        for (int32_t j = 0; j < k; ++j) by_expert_[size_t(order[size_t(j)])].emplace_back(t, weights[size_t(j)]);
    }
}

void CpuExperts::add_gate_up(const LayerWeights& lw, int32_t e, float* gate, float* up) {
    const int64_t F = cfg_.n_ff_exp;
    outputs_.push_back(product_(expert_rows(lw.gate_exps, cfg_.n_expert, e), gate, F));
    outputs_.back().bias = expert_bias(lw.gate_exps_b, F, e);
    outputs_.push_back(product_(expert_rows(lw.up_exps, cfg_.n_expert, e), up, F));
    outputs_.back().bias = expert_bias(lw.up_exps_b, F, e);
}

void CpuExperts::run(const LayerWeights& lw, const float* xn, float* out) {
    const int64_t E = cfg_.n_embd, F = cfg_.n_ff_exp;
    std::fill(out, out + rows_ * E, 0.0f);
    if (rows_ == 1) {
        run_one_row(lw, xn, out);
        return;
    }
    // Experts in id order: a row's sum runs over its experts in that order whatever the
    // other rows of the step chose, so its result does not depend on its batch.
    for (int32_t e = 0; e < cfg_.n_expert; ++e) {
        const auto& rows = by_expert_[size_t(e)];
        if (rows.empty()) continue;
        const int64_t n = int64_t(rows.size());
        x_.resize(size_t(n * E));
        gate_.resize(size_t(n * F));
        up_.resize(size_t(n * F));
        for (int64_t i = 0; i < n; ++i) std::copy_n(xn + rows[size_t(i)].first * E, E, &x_[size_t(i * E)]);
        outputs_.clear();
        add_gate_up(lw, e, gate_.data(), up_.data());
        matmul(pool_, x_.data(), n, outputs_, scratch_, activations_);
        for (int64_t i = 0; i < n; ++i) activate(gate_.data() + i * F, up_.data() + i * F);
        down_.resize(size_t(n * E));
        MatmulOutput down[] = {down_of(lw, e, down_.data())};
        matmul(pool_, gate_.data(), n, down, scratch_, activations_);
        for (int64_t i = 0; i < n; ++i) add_weighted(rows[size_t(i)].second, &down_[size_t(i * E)], out + rows[size_t(i)].first * E);
    }
}

// One row: every chosen expert's gate and up in one call, then every down product in one
// call (matmul_each: expert j's input is its own activation row), and the weighted sum in
// expert id order. Each output's arithmetic is the same as in a call of its own, so the
// bits are those of the batched path's.
void CpuExperts::run_one_row(const LayerWeights& lw, const float* xn, float* out) {
    const int64_t E = cfg_.n_embd, F = cfg_.n_ff_exp;
    const size_t k = size_t(cfg_.n_expert_used);  // route() chose exactly k
    gate_.resize(k * size_t(F));
    up_.resize(k * size_t(F));
    down_.resize(k * size_t(E));
    outputs_.clear();
    for (int32_t e = 0; e < cfg_.n_expert; ++e) {
        const size_t j = outputs_.size() / 2;  // experts added so far
        if (!by_expert_[size_t(e)].empty()) add_gate_up(lw, e, &gate_[j * size_t(F)], &up_[j * size_t(F)]);
    }
    matmul(pool_, xn, 1, outputs_, scratch_, activations_);
    outputs_.clear();
    for (int32_t e = 0; e < cfg_.n_expert; ++e) {
        if (by_expert_[size_t(e)].empty()) continue;
        const size_t j = outputs_.size();
        activate(&gate_[j * size_t(F)], &up_[j * size_t(F)]);
        outputs_.push_back(down_of(lw, e, &down_[j * size_t(E)]));
    }
    matmul_each(pool_, gate_.data(), outputs_, scratch_, activations_);
    size_t j = 0;
    for (int32_t e = 0; e < cfg_.n_expert; ++e)
        if (const auto& rows = by_expert_[size_t(e)]; !rows.empty()) add_weighted(rows[0].second, &down_[j++ * size_t(E)], out);
}

void CpuExperts::activate(float* gate, const float* up) const {
    if (cfg_.ffn_activation == ModelConfig::Activation::SwigluOai) swiglu_oai(gate, up, cfg_.n_ff_exp);
    else silu_mul(gate, up, cfg_.n_ff_exp);
}

MatmulOutput CpuExperts::down_of(const LayerWeights& lw, int32_t e, float* y) {
    MatmulOutput down = product_(expert_rows(lw.down_exps, cfg_.n_expert, e), y, cfg_.n_embd);
    down.bias = expert_bias(lw.down_exps_b, cfg_.n_embd, e);
    return down;
}

void CpuExperts::add_weighted(float w, const float* d, float* y) const {
    for (int64_t c = 0; c < cfg_.n_embd; ++c) y[c] += w * d[c];
}

} // namespace arbor
