// How often a pass of a kernel workload runs per second on a shared machine.
#pragma once

#include <algorithm>
#include <chrono>

namespace arbor::bench {

// Passes per second: the best of ten rounds of repeated passes, each round at least
// `round_seconds` (the best round is the one least disturbed by other work on the
// machine). The caller runs a warm-up pass first.
template <class Pass>
double best_passes_per_second(Pass&& pass, double round_seconds) {
    using Clock = std::chrono::steady_clock;
    double best = 0.0;
    for (int round = 0; round < 10; ++round) {
        int reps = 0;
        const auto start = Clock::now();
        double seconds = 0.0;
        do {
            pass();
            ++reps;
            seconds = std::chrono::duration<double>(Clock::now() - start).count();
        } while (seconds < round_seconds);
        best = std::max(best, reps / seconds);
    }
    return best;
}

} // namespace arbor::bench
