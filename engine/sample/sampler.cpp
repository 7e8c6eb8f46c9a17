#include "arbor/error.h"
#include "arbor/sampler.h"

#include <cmath>
#include <string>

namespace arbor {

Sampler::Sampler(SamplerParams params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
    if (n_vocab <= 0) throw Error("sampler: vocabulary size must be positive, got " + std::to_string(n_vocab));
    if (std::isnan(params.temperature) || std::isnan(params.top_p) || std::isnan(params.min_p) ||
        std::isnan(params.presence_penalty) || std::isnan(params.frequency_penalty))
        throw Error("sampler: parameters must not be NaN");
    if (!(params.repetition_penalty > 0.0f) || !std::isfinite(params.repetition_penalty))
        throw Error("sampler: repetition_penalty must be a positive number, got " +
                    std::to_string(params.repetition_penalty));
    if (params.penalty_last_n < 0)
        throw Error("sampler: penalty_last_n must not be negative, got " + std::to_string(params.penalty_last_n));
    window_.reserve(static_cast<size_t>(params.penalty_last_n));
}

bool Sampler::penalties_active() const {
    return !counts_.empty() && (params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                                params_.frequency_penalty != 0.0f);
}

int32_t Sampler::sample(std::span<const float> logits) {
    if (logits.size() != static_cast<size_t>(n_vocab_))
        throw Error("sampler: expected " + std::to_string(n_vocab_) + " logits, got " +
                    std::to_string(logits.size()));
    std::span<const float> row = logits;
    if (penalties_active()) {
        scratch_.assign(logits.begin(), logits.end());
        sampling::apply_penalties(scratch_, counts_, params_.repetition_penalty, params_.presence_penalty,
                                  params_.frequency_penalty);
        row = scratch_;
    }
    if (params_.temperature <= 0.0f) return sampling::argmax(row);

    sampling::Candidates c = sampling::top_k_of(row, params_.top_k);
    sampling::top_p(c, params_.top_p);
    sampling::min_p(c, params_.min_p);
    sampling::temperature(c, params_.temperature);
    return sampling::draw(c, rng_);
}

void Sampler::accept(int32_t token) {
    if (token < 0 || token >= n_vocab_)
        throw Error("sampler: token id " + std::to_string(token) + " is outside the vocabulary of " +
                    std::to_string(n_vocab_));
    const auto cap = static_cast<size_t>(params_.penalty_last_n);
    if (cap == 0) return;
    if (window_.size() < cap) {
        window_.push_back(token);
    } else {
        int32_t& slot = window_[window_next_];
        if (--counts_[slot] == 0) counts_.erase(slot);
        slot = token;
        window_next_ = (window_next_ + 1) % cap;
    }
    ++counts_[token];
}

void Sampler::reset() {
    window_.clear();
    window_next_ = 0;
    counts_.clear();
    rng_.seed(params_.seed);
}

} // namespace arbor
