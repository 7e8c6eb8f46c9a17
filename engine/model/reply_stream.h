// Turns sampled ids into the reply's text and decides when the reply ends: end-of-turn
// ids, stop strings, the token limit.
#pragma once

#include "arbor/generate_options.h"
#include "arbor/stop_strings.h"
#include "arbor/tokenizer.h"

#include <optional>
#include <string>

namespace arbor {

class ReplyStream {
public:
    ReplyStream(const Tokenizer& tokenizer, const GenerateOptions& options);

    struct Step {
        std::string text;                    // safe to show now
        std::optional<FinishReason> finish;  // set when this id ends the reply
    };
    // Accepts the next sampled id. After a finishing step, no more ids may be pushed.
    Step push(TokenId id);
    // Text held back at the end (partial characters, a stop-string prefix that never
    // completed); empty after a stop string was hit.
    std::string flush();
    int32_t count() const { return count_; }

private:
    const Tokenizer& tokenizer_;
    const GenerateOptions& options_;
    StreamDecoder decoder_;
    StopStringMatcher stops_;
    int32_t count_ = 0;
    bool hit_stop_string_ = false;
};

} // namespace arbor
