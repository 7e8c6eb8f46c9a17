#include "cpu_experts.h"

#include "arbor/kernels/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace arbor {

namespace {

// llama.cpp clamps the chosen weights' sum to the smallest normal F16 before dividing.
constexpr float kMinWeightSum = 6.103515625e-5f;

} // namespace

void CpuExperts::route(float* router_logits, int64_t rows) {
    const int32_t n = cfg_.n_expert, k = cfg_.n_expert_used;
    rows_ = rows;
    by_expert_.resize(size_t(n));
    for (auto& list : by_expert_) list.clear();
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t t = 0; t < rows; ++t) {
        float* p = router_logits + t * n;
        const float top = *std::max_element(p, p + n);
        double sum = 0.0;
        for (int32_t e = 0; e < n; ++e) sum += (p[e] = std::exp(p[e] - top));
        for (int32_t e = 0; e < n; ++e) p[e] = float(p[e] / sum);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        float chosen_sum = 0.0f;
        for (int32_t j = 0; j < k; ++j) chosen_sum += p[order[size_t(j)]];
        chosen_sum = std::max(chosen_sum, kMinWeightSum);
        for (int32_t j = 0; j < k; ++j) {
            const int32_t e = order[size_t(j)];
            by_expert_[size_t(e)].emplace_back(t, p[e] / chosen_sum);
        }
    }
}

void CpuExperts::run(const LayerWeights& lw, const float* xn, float* out) {
    const int64_t E = cfg_.n_embd, F = cfg_.n_ff_exp;
    std::fill(out, out + rows_ * E, 0.0f);
    // Experts in id order: a row's sum runs over its experts in that order whatever the
    // other rows of the step chose, so its result does not depend on its batch.
    for (int32_t e = 0; e < cfg_.n_expert; ++e) {
        const auto& rows = by_expert_[size_t(e)];
        if (rows.empty()) continue;
        const int64_t n = int64_t(rows.size());
        x_.resize(size_t(n * E));
        gate_.resize(size_t(n * F));
        up_.resize(size_t(n * F));
        down_.resize(size_t(n * E));
        for (int64_t i = 0; i < n; ++i) std::copy_n(xn + rows[size_t(i)].first * E, E, &x_[size_t(i * E)]);
        const MatmulOutput gate_up[] = {product_(expert_rows(lw.gate_exps, cfg_.n_expert, e), gate_.data(), F),
                                        product_(expert_rows(lw.up_exps, cfg_.n_expert, e), up_.data(), F)};
        matmul(pool_, x_.data(), n, gate_up, scratch_, activations_);
        for (int64_t i = 0; i < n; ++i) silu_mul(&gate_[size_t(i * F)], &up_[size_t(i * F)], F);
        const MatmulOutput down[] = {product_(expert_rows(lw.down_exps, cfg_.n_expert, e), down_.data(), E)};
        matmul(pool_, gate_.data(), n, down, scratch_, activations_);
        for (int64_t i = 0; i < n; ++i) {
            const auto [t, w] = rows[size_t(i)];
            float* y = out + t * E;
            const float* d = &down_[size_t(i * E)];
            for (int64_t c = 0; c < E; ++c) y[c] += w * d[c];
        }
    }
}

} // namespace arbor
