// What a reply asks for (sampling, length, stops) and how it ended: shared by the
// engine's requests, the API and the app.
#pragma once

#include "arbor/sampler.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

struct GenerateOptions {
    SamplerParams sampler;
    int32_t max_tokens = 256;
    std::vector<std::string> stop_strings;
    bool stop_at_end_of_generation = true;  // end on eos / end-of-turn tokens
};

// Length: max_tokens generated (or a prefill-only request done). ContextFull: the
// sequence reached the engine's context before either (the API reports it as "length",
// as OpenAI does).
enum class FinishReason { Stop, Length, ContextFull, Cancelled, Error };
std::string_view finish_reason_name(FinishReason reason);

} // namespace arbor
