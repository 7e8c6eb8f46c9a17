#include "step_profile.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace arbor {

StepProfile::StepProfile() {
    const char* p = std::getenv("ARBOR_CUDA_PROFILE");
    enabled_ = p && std::strcmp(p, "0") != 0;
}

StepProfile::~StepProfile() {
    if (enabled_ && graph_us_.count + staged_us_.count > 0) {
        auto per = [](const Total& t) { return t.count ? t.us / double(t.count) : 0.0; };
        std::fprintf(stderr, "cuda profile: decode steps %ld as graphs, %ld staged\n", graph_us_.count,
                     staged_us_.count);
        std::fprintf(stderr, "cuda profile: GPU per step: graph %.1f us, staged %.1f us\n", per(graph_us_),
                     per(staged_us_));
        std::fprintf(stderr, "cuda profile: host per step: in forward %.1f us, between forwards %.1f us\n",
                     per(forward_host_us_), per(between_us_));
        for (const auto& [stage, t] : stage_us_)
            std::fprintf(stderr, "cuda profile: stage %-12s %8.1f us per staged step (%.1f launches)\n",
                         stage.c_str(), t.us / double(staged_us_.count),
                         double(t.count) / double(staged_us_.count));
    }
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t StepProfile::event(size_t i) {
    while (events_.size() <= i) {
        cudaEvent_t e = nullptr;
        cudaEventCreate(&e);
        events_.push_back(e);
    }
    return events_[i];
}

void StepProfile::begin_step(int rows, cudaStream_t stream) {
    timing_ = false;
    if (!enabled_) return;
    forward_start_ = Clock::now();
    if (has_last_ && rows <= 8) {
        between_us_.us += std::chrono::duration<double, std::micro>(forward_start_ - last_end_).count();
        ++between_us_.count;
    }
    if (rows > 8) return;  // prefill steps are not profiled
    timing_ = true;
    staged_ = !staged_;
    stream_ = stream;
    used_ = 0;
    stages_.clear();
    cudaEventRecord(event(used_++), stream_);
}

void StepProfile::mark(const char* stage) {
    if (!timing_ || !staged_) return;
    cudaEventRecord(event(used_++), stream_);
    stages_.emplace_back(stage);
}

void StepProfile::end_kernels() {
    if (timing_) cudaEventRecord(event(used_++), stream_);
}

void StepProfile::end_step() {
    if (!enabled_) return;
    last_end_ = Clock::now();
    has_last_ = true;
    if (!timing_) return;
    forward_host_us_.us += std::chrono::duration<double, std::micro>(last_end_ - forward_start_).count();
    ++forward_host_us_.count;
    cudaEventSynchronize(events_[used_ - 1]);
    float total = 0;
    cudaEventElapsedTime(&total, events_[0], events_[used_ - 1]);
    Total& whole = staged_ ? staged_us_ : graph_us_;
    whole.us += 1e3 * double(total);
    ++whole.count;
    for (size_t i = 0; i < stages_.size(); ++i) {
        float ms = 0;
        cudaEventElapsedTime(&ms, events_[i], events_[i + 1]);
        Total& t = stage_us_[stages_[i]];
        t.us += 1e3 * double(ms);
        ++t.count;
    }
}

} // namespace arbor
