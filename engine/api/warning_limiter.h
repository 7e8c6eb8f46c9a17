// Rate limit for repeated warnings: a flood of refused connections or failing requests
// must not flood the log too. Each kind of warning is written at most once per period;
// the next line written for that kind says how many were left out since.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace arbor::api {

class WarningLimiter {
public:
    using Clock = std::chrono::steady_clock;

    explicit WarningLimiter(Clock::duration period = std::chrono::seconds(10)) : period_(period) {}

    // The line to log for this warning, or nullopt when one of its kind was logged less
    // than a period ago (it is then counted). Thread-safe.
    std::optional<std::string> admit(const std::string& kind, const std::string& message, Clock::time_point now);
    // admit() at the current time, and spdlog::warn() of the line when there is one.
    void warn(const std::string& kind, const std::string& message);

private:
    struct Kind {
        Clock::time_point last;
        long suppressed = 0;
    };
    Clock::duration period_;
    std::mutex mutex_;
    std::map<std::string, Kind> kinds_;  // guarded by mutex_; one entry per kind (few)
};

} // namespace arbor::api
