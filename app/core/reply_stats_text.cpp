#include "reply_stats_text.h"

#include <QStringList>

#include <algorithm>

namespace arbor::app {

QString ReplyStatsText::format(const ReplyStats& stats) {
    QStringList parts;
    if (stats.tokensPerSecond >= 0) parts << tr("%1 tokens/s").arg(stats.tokensPerSecond, 0, 'f', 1);
    if (stats.timeToFirstTokenMs >= 0) parts << tr("first token %1 ms").arg(qRound(stats.timeToFirstTokenMs));
    if (stats.promptTokens >= 0) {
        // Replies stored before the disk tier have no diskTokens: all their cached tokens
        // came from memory.
        const int prompt = stats.promptTokens;
        const int cached = std::clamp(stats.cachedTokens, 0, prompt);
        const int disk = std::clamp(stats.diskTokens, 0, cached);
        parts << tr("%1 prompt tokens: %2 from memory, %3 from disk, %4 computed")
                     .arg(prompt)
                     .arg(cached - disk)
                     .arg(disk)
                     .arg(prompt - cached);
    }
    using F = ReplyStats::FinishReason;
    if (stats.finishReason == F::Length) parts << tr("stopped at max tokens");
    else if (stats.finishReason == F::ContextFull) parts << tr("stopped: the context is full");
    else if (stats.finishReason != F::None && stats.finishReason != F::Stop)
        parts << QString::fromStdString(storedFinishReason(stats.finishReason, stats.error));
    return parts.join(QStringLiteral("  ·  "));
}

} // namespace arbor::app
