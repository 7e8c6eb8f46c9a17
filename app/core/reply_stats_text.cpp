#include "reply_stats_text.h"

#include <QStringList>

#include <algorithm>

namespace arbor::app {

QString ReplyStatsText::format(const QVariantMap& stats) {
    QStringList parts;
    if (const QVariant v = stats.value(QStringLiteral("tokensPerSecond")); v.isValid())
        parts << tr("%1 tokens/s").arg(v.toDouble(), 0, 'f', 1);
    if (const QVariant v = stats.value(QStringLiteral("ttftMs")); v.isValid())
        parts << tr("first token %1 ms").arg(qRound(v.toDouble()));
    if (const QVariant v = stats.value(QStringLiteral("promptTokens")); v.isValid()) {
        // Replies stored before the disk tier have no diskTokens: all their cached tokens
        // came from memory.
        const int prompt = v.toInt();
        const int cached = std::clamp(stats.value(QStringLiteral("cachedTokens")).toInt(), 0, prompt);
        const int disk = std::clamp(stats.value(QStringLiteral("diskTokens")).toInt(), 0, cached);
        parts << tr("%1 prompt tokens: %2 from memory, %3 from disk, %4 computed")
                     .arg(prompt)
                     .arg(cached - disk)
                     .arg(disk)
                     .arg(prompt - cached);
    }
    const QString finish = stats.value(QStringLiteral("finishReason")).toString();
    if (finish == QLatin1String("length")) parts << tr("stopped at max tokens");
    else if (!finish.isEmpty() && finish != QLatin1String("stop")) parts << finish;
    return parts.join(QStringLiteral("  ·  "));
}

} // namespace arbor::app
