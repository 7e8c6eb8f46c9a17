#include "arbor/stop_strings.h"

#include <algorithm>

namespace arbor {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) {
    for (auto& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

// Longest suffix of pending_ that is a proper prefix of some stop string. Holding back
// exactly this much guarantees a stop string can never start inside emitted text.
size_t StopStringMatcher::held_suffix_length() const {
    size_t best = 0;
    for (const auto& s : stops_) {
        const size_t max_len = std::min(s.size() - 1, pending_.size());
        for (size_t len = max_len; len > best; --len) {
            if (std::string_view(pending_).substr(pending_.size() - len) == std::string_view(s).substr(0, len)) {
                best = len;
                break;
            }
        }
    }
    return best;
}

StopStringMatcher::Result StopStringMatcher::push(std::string_view piece) {
    if (stopped_) return {{}, true};
    pending_.append(piece);
    size_t first = std::string::npos;
    for (const auto& s : stops_) first = std::min(first, pending_.find(s));
    if (first != std::string::npos) {
        Result r{pending_.substr(0, first), true};
        pending_.clear();
        stopped_ = true;
        return r;
    }
    const size_t keep = held_suffix_length();
    Result r{pending_.substr(0, pending_.size() - keep), false};
    pending_.erase(0, pending_.size() - keep);
    return r;
}

std::string StopStringMatcher::flush() {
    std::string out;
    out.swap(pending_);
    return out;
}

} // namespace arbor
