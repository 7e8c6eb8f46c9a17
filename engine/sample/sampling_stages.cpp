#include "arbor/error.h"
#include "arbor/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace arbor::sampling {
namespace {

// Strict total order on candidates: higher logit first, then lower id.
bool before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The best k of n candidates, sorted, in one pass over them: a heap whose top is the
// worst kept candidate rejects almost every element with a single comparison.
template <typename Get>
std::vector<Candidate> select_best(size_t n, size_t k, Get get) {
    std::vector<Candidate> heap;
    heap.reserve(k);
    for (size_t i = 0; i < n; ++i) {
        const Candidate x = get(i);
        if (heap.size() < k) {
            heap.push_back(x);
            std::push_heap(heap.begin(), heap.end(), before);
        } else if (before(x, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), before);
            heap.back() = x;
            std::push_heap(heap.begin(), heap.end(), before);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), before);
    return heap;
}

float max_logit(const Candidates& c) {
    if (c.sorted) return c.items.front().logit;
    float m = -std::numeric_limits<float>::infinity();
    for (const auto& x : c.items) m = std::max(m, x.logit);
    return m;
}

// exp(logit - max) for every candidate; when the maximum is infinite (all -inf, or
// some +inf) the candidates equal to it share the mass evenly.
std::vector<double> weights(const Candidates& c, double* total) {
    std::vector<double> w(c.items.size());
    const float m = max_logit(c);
    double sum = 0.0;
    if (std::isfinite(m)) {
        // Single precision exp: the mass is summed in double, and float relative
        // precision is ample for probabilities.
        for (size_t i = 0; i < w.size(); ++i) {
            w[i] = static_cast<double>(std::exp(c.items[i].logit - m));
            sum += w[i];
        }
    } else {
        for (size_t i = 0; i < w.size(); ++i) {
            w[i] = c.items[i].logit == m ? 1.0 : 0.0;
            sum += w[i];
        }
    }
    *total = sum;
    return w;
}

} // namespace

Candidates make_candidates(std::span<const float> logits) {
    Candidates c;
    c.items.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isnan(logits[i])) throw Error("sampler: logit " + std::to_string(i) + " is NaN");
        c.items[i] = Candidate{static_cast<int32_t>(i), logits[i]};
    }
    return c;
}

void apply_penalties(std::span<float> logits, const TokenCounts& counts, float repetition,
                     float presence, float frequency) {
    for (const auto& [id, count] : counts) {
        if (id < 0 || static_cast<size_t>(id) >= logits.size() || count <= 0) continue;
        float& l = logits[static_cast<size_t>(id)];
        l = l > 0.0f ? l / repetition : l * repetition;
        l -= static_cast<float>(count) * frequency + presence;
    }
}

void top_k(Candidates& c, int k) {
    if (k <= 0 || static_cast<size_t>(k) >= c.items.size()) return;
    if (c.sorted) {
        c.items.resize(static_cast<size_t>(k));
        return;
    }
    c.items = select_best(c.items.size(), static_cast<size_t>(k), [&](size_t i) { return c.items[i]; });
    c.sorted = true;
}

Candidates top_k_of(std::span<const float> logits, int k) {
    if (k <= 0 || static_cast<size_t>(k) >= logits.size()) return make_candidates(logits);
    Candidates c;
    c.items = select_best(logits.size(), static_cast<size_t>(k), [&](size_t i) {
        if (std::isnan(logits[i])) throw Error("sampler: logit " + std::to_string(i) + " is NaN");
        return Candidate{static_cast<int32_t>(i), logits[i]};
    });
    c.sorted = true;
    return c;
}

void top_p(Candidates& c, float p) {
    if (!(p < 1.0f) || c.items.empty()) return;
    double total = 0.0;
    const std::vector<double> w = weights(c, &total);
    const double target = static_cast<double>(p) * total;
    if (c.sorted) {
        double cum = 0.0;
        for (size_t i = 0; i < c.items.size(); ++i) {
            cum += w[i];
            if (cum >= target) {
                c.items.resize(i + 1);
                return;
            }
        }
        return;
    }
    // Unsorted (typically the whole vocabulary): find the worst kept candidate by
    // quickselect on probability mass instead of sorting, then filter in place so the
    // survivors keep their order.
    struct Entry {
        Candidate c;
        double w;
    };
    // Candidates lighter than `light` weigh less than (1 - p) of the mass all together,
    // so the kept set lies among the heavier ones; this usually leaves few to select from.
    const double light = (total - target) / static_cast<double>(c.items.size());
    std::vector<Entry> e;
    for (size_t i = 0; i < c.items.size(); ++i)
        if (w[i] >= light) e.push_back({c.items[i], w[i]});
    size_t lo = 0, hi = e.size();
    double need = target;  // mass still to collect from e[lo, hi)
    Candidate cut = c.items.front();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        std::swap(e[mid], e[hi - 1]);
        const Candidate pivot = e[hi - 1].c;
        size_t store = lo;
        double better_mass = 0.0;
        for (size_t i = lo; i + 1 < hi; ++i) {
            if (before(e[i].c, pivot)) {
                better_mass += e[i].w;
                std::swap(e[i], e[store++]);
            }
        }
        std::swap(e[store], e[hi - 1]);  // pivot now at `store`
        if (better_mass >= need && store > lo) {
            hi = store;
        } else if (better_mass + e[store].w >= need || store + 1 == hi) {
            cut = pivot;
            break;
        } else {
            need -= better_mass + e[store].w;
            lo = store + 1;
        }
    }
    std::erase_if(c.items, [&](const Candidate& x) { return before(cut, x); });
}

void min_p(Candidates& c, float p) {
    if (!(p > 0.0f) || c.items.empty()) return;
    const float m = max_logit(c);
    if (!std::isfinite(m)) return;
    const double threshold = std::min(static_cast<double>(p), 1.0);
    std::erase_if(c.items, [&](const Candidate& x) {
        return static_cast<double>(std::exp(x.logit - m)) < threshold;
    });
}

void temperature(Candidates& c, float t) {
    for (auto& x : c.items) x.logit /= t;
}

std::vector<double> probabilities(const Candidates& c) {
    double total = 0.0;
    std::vector<double> w = weights(c, &total);
    for (double& x : w) x /= total;
    return w;
}

double unit_interval(uint64_t bits) {
    // The top 53 bits fill a double's mantissa exactly.
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

int32_t draw(const Candidates& c, std::mt19937_64& rng) {
    if (c.items.empty()) throw Error("sampler: no candidates left to draw from");
    double total = 0.0;
    const std::vector<double> w = weights(c, &total);
    const double target = unit_interval(rng()) * total;
    double cum = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        if (w[i] <= 0.0) continue;
        cum += w[i];
        last_positive = i;
        if (target < cum) return c.items[i].id;
    }
    return c.items[last_positive].id;
}

namespace {
// Four floats as one vector (GCC/Clang vector extensions: SSE on x86-64, NEON on ARM).
using Floats4 = float __attribute__((vector_size(16)));
using Ints4 = int32_t __attribute__((vector_size(16)));
Floats4 load4(const float* p) {
    Floats4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
} // namespace

// Two passes over blocks of sixteen logits in four vectors: the largest value and any
// NaN, then the first block holding that value, searched one by one. Written as scalar
// loops (eight running maxima, then std::find) the compiler kept both passes scalar:
// 40-65 us for a 49,152-token vocabulary, once per greedy row per step, on the engine
// thread while the pool waits; these take 6-12 us.
int32_t argmax(std::span<const float> logits) {
    if (logits.empty()) throw Error("sampler: empty logits");
    constexpr size_t kVectors = 4, kBlock = 4 * kVectors;
    const float* x = logits.data();
    const size_t n = logits.size();
    const float low = -std::numeric_limits<float>::infinity();
    Floats4 maxima[kVectors];
    Ints4 nan[kVectors] = {};
    for (auto& m : maxima) m = Floats4{low, low, low, low};
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock)
        for (size_t k = 0; k < kVectors; ++k) {
            const Floats4 v = load4(x + i + 4 * k);
            nan[k] |= v != v;
            maxima[k] = maxima[k] < v ? v : maxima[k];
        }
    float best = low;
    bool any_nan = false;
    for (size_t k = 0; k < kVectors; ++k)
        for (int j = 0; j < 4; ++j) {
            best = std::max(best, maxima[k][j]);
            any_nan |= nan[k][j] != 0;
        }
    for (; i < n; ++i) {
        any_nan |= x[i] != x[i];
        best = std::max(best, x[i]);
    }
    if (any_nan) throw Error("sampler: logits contain NaN");
    const Floats4 target = {best, best, best, best};
    for (i = 0; i + kBlock <= n; i += kBlock) {
        Ints4 hit = {};
        for (size_t k = 0; k < kVectors; ++k) hit |= load4(x + i + 4 * k) == target;
        if (hit[0] | hit[1] | hit[2] | hit[3]) break;
    }
    while (x[i] != best) ++i;  // best is one of the values from i on
    return static_cast<int32_t>(i);
}

} // namespace arbor::sampling
