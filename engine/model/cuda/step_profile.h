// Where a decode step's time goes on the GPU, for tuning (ARBOR_CUDA_PROFILE=1): steps of
// up to kMatvecRows rows alternate between the captured graph, timed whole with two
// events, and kernel-by-kernel launches with an event after each stage, so that one run
// gives both the graph's time per step and each stage's share. Host time spent in
// forward and between forwards (the engine, sampling) is measured beside them. The
// figures go to stderr when the backend is destroyed.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace arbor {

class StepProfile {
public:
    StepProfile();
    ~StepProfile();
    StepProfile(const StepProfile&) = delete;
    StepProfile& operator=(const StepProfile&) = delete;

    bool enabled() const { return enabled_; }
    // Whether this step runs kernel by kernel with stage marks (else as its graph).
    bool staged_step() const { return enabled_ && staged_; }
    // Around one forward of `rows` rows; the events go on `stream`.
    void begin_step(int rows, cudaStream_t stream);
    void mark(const char* stage);  // after the kernels of `stage` were enqueued
    void end_kernels();            // after the step's last kernel was enqueued
    void end_step();               // after the step's stream was synchronised

private:
    using Clock = std::chrono::steady_clock;
    struct Total {
        double us = 0;
        long count = 0;
    };
    cudaEvent_t event(size_t i);

    bool enabled_ = false, staged_ = false, timing_ = false;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
    std::vector<std::string> stages_;
    size_t used_ = 0;
    Clock::time_point forward_start_, last_end_;
    bool has_last_ = false;
    std::map<std::string, Total> stage_us_;  // per stage, staged steps
    Total graph_us_, staged_us_, forward_host_us_, between_us_;
};

} // namespace arbor
