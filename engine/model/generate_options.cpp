#include "arbor/generate_options.h"

namespace arbor {

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context full";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    }
    return "unknown";
}

} // namespace arbor
