#include "api/warning_limiter.h"

#include <spdlog/spdlog.h>

namespace arbor::api {

std::optional<std::string> WarningLimiter::admit(const std::string& kind, const std::string& message,
                                                 Clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto [it, fresh] = kinds_.try_emplace(kind);
    Kind& k = it->second;
    if (!fresh && now - k.last < period_) {
        ++k.suppressed;
        return std::nullopt;
    }
    std::string line = message;
    if (k.suppressed > 0) {
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now - k.last).count();
        line += " (and " + std::to_string(k.suppressed) + " more like it in the last " + std::to_string(seconds) + " s)";
    }
    k.last = now;
    k.suppressed = 0;
    return line;
}

void WarningLimiter::warn(const std::string& kind, const std::string& message) {
    if (auto line = admit(kind, message, Clock::now())) spdlog::warn("{}", *line);
}

} // namespace arbor::api
