// Watches streamed text for stop strings. Text that could still turn out to be the start
// of a stop string is held back, so the caller never shows part of a stop string.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace arbor {

class StopStringMatcher {
public:
    // Empty stop strings are ignored.
    explicit StopStringMatcher(std::vector<std::string> stops);

// Qt defines `emit` as an empty macro; keep the declaration valid when Qt headers come
// first. Qt code reading the member needs QT_NO_EMIT (or #undef emit) itself.
#ifdef emit
#pragma push_macro("emit")
#undef emit
#define ARBOR_STOP_STRINGS_RESTORE_EMIT
#endif
    struct Result {
        std::string emit;      // text safe to show now
        bool stopped = false;  // a stop string was hit: emit ends right before it
    };
#ifdef ARBOR_STOP_STRINGS_RESTORE_EMIT
#pragma pop_macro("emit")
#undef ARBOR_STOP_STRINGS_RESTORE_EMIT
#endif
    // Once stopped, further pieces are ignored (empty emit, stopped = true).
    Result push(std::string_view piece);
    // The held-back text at the end of generation (empty once stopped).
    std::string flush();
    bool stopped() const { return stopped_; }

private:
    size_t held_suffix_length() const;

    std::vector<std::string> stops_;
    std::string pending_;
    bool stopped_ = false;
};

} // namespace arbor
