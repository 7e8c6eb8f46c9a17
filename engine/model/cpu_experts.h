// The CPU backend's FFN of a layer of routed experts (qwen3moe, gpt-oss). For the rows
// of a step, with router logits l = xn . router (+ its bias):
//   qwen3moe:   p = softmax(l), E = the n_expert_used largest p, w_e = p_e / sum_E(p);
//   gpt-oss: E = the n_expert_used largest l, w = softmax(l over E);
//   out = sum over e in E of w_e * down_e(act(xn . gate_e, xn . up_e))
// (ties to the lower id; act: silu(g) * u, or gpt-oss's clamped SwiGLU (model.h); each
// product plus the expert's bias where the model has them).
// Rows are grouped by expert, so each chosen expert's matrices are read once per step
// (a prompt's rows share them) and the experts no row chose are not read at all. A step
// of one row (one chat's decode) gives every chosen expert the same input: their gate and
// up products then go in one call over the pool.
#pragma once

#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/matmul.h"
#include "arbor/model.h"

#include <functional>
#include <vector>

namespace arbor {

class CpuExperts {
public:
    // The product of a weight (panels where the backend packed them) into y, ldy apart.
    using Product = std::function<MatmulOutput(const TensorView& w, float* y, int64_t ldy)>;

    CpuExperts(const ModelConfig& cfg, ThreadPool& pool, MatmulScratch& scratch, Activations activations,
               Product product)
        : cfg_(cfg), pool_(pool), scratch_(scratch), activations_(activations), product_(std::move(product)) {}

    // Each of the `rows` rows' chosen experts and their weights, from its router logits
    // (n_expert per row, overwritten with the probabilities).
    void route(float* router_logits, int64_t rows);
    // out (rows x n_embd) = the weighted sum of each row's chosen experts applied to its
    // row of xn (rows x n_embd), as route() chose them.
    void run(const LayerWeights& lw, const float* xn, float* out);

private:
    // Appends expert e's gate and up products (into gate and up, n_ff_exp apart) to outputs_.
    void add_gate_up(const LayerWeights& lw, int32_t e, float* gate, float* up);
    void run_one_row(const LayerWeights& lw, const float* xn, float* out);
    // gate = act(gate, up), n_ff_exp values: the FFN activation of an expert's row.
    void activate(float* gate, const float* up) const;
    // Expert e's down product into y.
    MatmulOutput down_of(const LayerWeights& lw, int32_t e, float* y);
    // y += w * d, n_embd values.
    void add_weighted(float w, const float* d, float* y) const;

    const ModelConfig& cfg_;
    ThreadPool& pool_;
    MatmulScratch& scratch_;
    Activations activations_;
    Product product_;
    int64_t rows_ = 0;
    // The rows that chose each expert and the weight each gives it, rows in order.
    std::vector<std::vector<std::pair<int64_t, float>>> by_expert_;
    // One expert's rows: their inputs, gate and up, down's output. A one-row step keeps
    // every chosen expert's gate, up and down in gate_, up_ and down_, expert after expert.
    AlignedFloats x_, gate_, up_, down_;
    std::vector<MatmulOutput> outputs_;  // the products of the next matmul call
};

} // namespace arbor
