#include "reply_stats.h"

namespace arbor::app {

namespace {

constexpr std::string_view kErrorPrefix = "error: ";

template <class T>
std::optional<T> measured(T value) { return value >= 0 ? std::optional<T>(value) : std::nullopt; }

ReplyStats::FinishReason fromEngineReason(arbor::FinishReason reason) {
    switch (reason) {
    case arbor::FinishReason::Stop: return ReplyStats::FinishReason::Stop;
    case arbor::FinishReason::Length: return ReplyStats::FinishReason::Length;
    case arbor::FinishReason::ContextFull: return ReplyStats::FinishReason::ContextFull;
    case arbor::FinishReason::Cancelled: return ReplyStats::FinishReason::Cancelled;
    case arbor::FinishReason::Error: return ReplyStats::FinishReason::Error;
    }
    return ReplyStats::FinishReason::Error;
}

} // namespace

ReplyStats ReplyStats::fromEngine(const arbor::RequestStats& stats, arbor::FinishReason reason,
                                  const std::string& error) {
    ReplyStats s;
    s.promptTokens = stats.prompt_tokens;
    s.cachedTokens = stats.cached_tokens;
    s.diskTokens = stats.disk_tokens;
    s.generatedTokens = stats.generated_tokens;
    s.timeToFirstTokenMs = stats.time_to_first_token_ms;
    s.tokensPerSecond = stats.decode_tokens_per_second;
    s.finishReason = fromEngineReason(reason);
    s.error = QString::fromStdString(error);
    return s;
}

ReplyStats ReplyStats::fromMessage(const arbor::MessageStats& m) {
    ReplyStats s;
    s.promptTokens = m.prompt_tokens.value_or(-1);
    s.cachedTokens = m.cached_tokens.value_or(-1);
    s.diskTokens = m.disk_tokens.value_or(-1);
    s.timeToFirstTokenMs = m.ttft_ms.value_or(-1.0);
    s.tokensPerSecond = m.tokens_per_second.value_or(-1.0);
    s.omittedMessages = m.omitted_messages.value_or(0);
    s.finishReason = finishReasonFromStored(m.finish_reason, &s.error);
    return s;
}

arbor::MessageStats ReplyStats::toMessage() const {
    arbor::MessageStats m;
    m.prompt_tokens = measured(promptTokens);
    m.cached_tokens = measured(cachedTokens);
    m.disk_tokens = measured(diskTokens);
    m.ttft_ms = measured(timeToFirstTokenMs);
    m.tokens_per_second = measured(tokensPerSecond);
    if (omittedMessages > 0) m.omitted_messages = omittedMessages;
    m.finish_reason = storedFinishReason(finishReason, error);
    return m;
}

std::string storedFinishReason(ReplyStats::FinishReason reason, const QString& error) {
    switch (reason) {
    case ReplyStats::FinishReason::None: return {};
    case ReplyStats::FinishReason::Stop: return "stop";
    case ReplyStats::FinishReason::Length: return "length";
    case ReplyStats::FinishReason::ContextFull: return "context full";
    case ReplyStats::FinishReason::Cancelled: return "cancelled";
    case ReplyStats::FinishReason::Unloaded: return "model unloaded";
    case ReplyStats::FinishReason::Error: return std::string(kErrorPrefix) + error.toStdString();
    }
    return {};
}

ReplyStats::FinishReason finishReasonFromStored(const std::string& stored, QString* error) {
    using F = ReplyStats::FinishReason;
    if (stored.empty()) return F::None;
    if (stored == "stop") return F::Stop;
    if (stored == "length") return F::Length;
    if (stored == "context full") return F::ContextFull;
    if (stored == "cancelled") return F::Cancelled;
    if (stored == "model unloaded") return F::Unloaded;
    const std::string_view why = stored.starts_with(kErrorPrefix)
                                     ? std::string_view(stored).substr(kErrorPrefix.size())
                                     : std::string_view(stored);
    if (error) *error = QString::fromUtf8(why.data(), qsizetype(why.size()));
    return F::Error;
}

} // namespace arbor::app
