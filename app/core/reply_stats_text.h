// The stats line under a finished reply, from its ReplyStats: speed, time to first token,
// where its prompt tokens came from (the prefix cache in memory, the KV disk tier, or
// computed) and why it stopped when that was not the end of its turn.
#pragma once

#include "reply_stats.h"

#include <QObject>
#include <QString>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class ReplyStatsText : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_SINGLETON
public:
    using QObject::QObject;
    // E.g. "41.3 tokens/s  ·  first token 85 ms  ·  612 prompt tokens: 96 from memory,
    // 496 from disk, 20 computed"; empty when nothing was measured.
    Q_INVOKABLE static QString format(const arbor::app::ReplyStats& stats);
};

} // namespace arbor::app
