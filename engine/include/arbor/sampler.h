// Token sampling from one row of logits: penalties -> top-k -> top-p -> min-p ->
// temperature -> seeded draw (the order of llama.cpp's common sampler chain), with a
// greedy fast path. The stages are free functions so each can be used and tested alone.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

namespace arbor {

struct SamplerParams {
    float temperature = 0.8f;         // <= 0 means greedy (argmax, ties -> lowest id)
    int top_k = 40;                   // <= 0 disables
    float top_p = 0.95f;              // >= 1 disables
    float min_p = 0.05f;              // <= 0 disables
    float repetition_penalty = 1.0f;  // 1 disables; must be > 0
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    int penalty_last_n = 64;          // window of accepted tokens the penalties look at; 0 disables
    uint64_t seed = 0;                // same seed + same logits => same choices
};

namespace sampling {

struct Candidate {
    int32_t id;
    float logit;
};

// Candidates are either in id order (as built) or, once `sorted` is set, ordered by
// descending logit with ties broken by ascending id. Both orders are fully determined
// by the logits, so draws never depend on the standard library's sort algorithm.
struct Candidates {
    std::vector<Candidate> items;
    bool sorted = false;
};

// The distinct tokens of the penalty window and how often each occurs there.
using TokenCounts = std::unordered_map<int32_t, int>;

// All of `logits` as candidates, in id order. Throws arbor::Error on NaN.
Candidates make_candidates(std::span<const float> logits);

// For every token in `counts` (ids outside `logits` are ignored):
//   logit = logit > 0 ? logit / repetition : logit * repetition
//   logit -= count * frequency + presence
void apply_penalties(std::span<float> logits, const TokenCounts& counts, float repetition,
                     float presence, float frequency);

// Keeps the k highest candidates and sorts them. k <= 0 or k >= size: no-op.
void top_k(Candidates& c, int k);

// make_candidates followed by top_k, without building the full candidate list.
Candidates top_k_of(std::span<const float> logits, int k);

// Keeps the smallest set of highest-probability candidates whose probability mass
// reaches p (at least one candidate), in their current order. p >= 1: no-op.
void top_p(Candidates& c, float p);

// Keeps candidates with probability >= p * (highest probability); order is preserved.
// p <= 0: no-op.
void min_p(Candidates& c, float p);

// Divides every logit by t (t > 0).
void temperature(Candidates& c, float t);

// Softmax probabilities of the candidates, in their current order.
std::vector<double> probabilities(const Candidates& c);

// Maps 64 random bits to a double uniform in [0, 1), independent of the standard library.
double unit_interval(uint64_t bits);

// Draws one candidate id with probability softmax(logit), using one value from `rng`.
int32_t draw(const Candidates& c, std::mt19937_64& rng);

// Index of the largest value, lowest index on ties. Throws arbor::Error on NaN or empty.
int32_t argmax(std::span<const float> logits);

} // namespace sampling

class Sampler {
public:
    // Throws arbor::Error for n_vocab <= 0 or invalid parameters.
    Sampler(SamplerParams params, int32_t n_vocab);

    // Does not modify the caller's logits. Throws arbor::Error when logits.size() !=
    // n_vocab or a logit is NaN.
    int32_t sample(std::span<const float> logits);
    // Records a token (prompt or generated) in the penalty window.
    void accept(int32_t token);
    // Forgets the history and restarts the random sequence from the seed.
    void reset();

    const SamplerParams& params() const { return params_; }

private:
    bool penalties_active() const;

    SamplerParams params_;
    int32_t n_vocab_;
    std::mt19937_64 rng_;
    std::vector<int32_t> window_;  // ring buffer of the last penalty_last_n tokens
    size_t window_next_ = 0;
    sampling::TokenCounts counts_;
    std::vector<float> scratch_;
};

} // namespace arbor
