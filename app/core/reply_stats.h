// The figures of one reply in the app's one shape: what the engine measured for a
// request (fromEngine), what the store keeps for a message (fromMessage / toMessage) and
// what QML binds to (the gadget itself: model.stats.tokensPerSecond, compared with
// ReplyStats.Length; ReplyStatsText formats it).
#pragma once

#include "arbor/engine.h"
#include "arbor/store.h"

#include <QMetaType>
#include <QObject>
#include <QString>
#include <QtQml/qqmlregistration.h>

#include <optional>

namespace arbor::app {

struct ReplyStats {
    Q_GADGET
    Q_PROPERTY(int promptTokens MEMBER promptTokens)
    Q_PROPERTY(int cachedTokens MEMBER cachedTokens)
    Q_PROPERTY(int diskTokens MEMBER diskTokens)
    Q_PROPERTY(int generatedTokens MEMBER generatedTokens)
    Q_PROPERTY(double timeToFirstTokenMs MEMBER timeToFirstTokenMs)
    Q_PROPERTY(double tokensPerSecond MEMBER tokensPerSecond)
    Q_PROPERTY(int omittedMessages MEMBER omittedMessages)
    Q_PROPERTY(FinishReason finishReason MEMBER finishReason)
    Q_PROPERTY(QString error MEMBER error)
public:
    // Why a reply ended; None while it has not (or it predates finish reasons).
    // Length: at max tokens; ContextFull: the reply filled the model's context first.
    enum class FinishReason { None, Stop, Length, ContextFull, Cancelled, Unloaded, Error };
    Q_ENUM(FinishReason)

    // A field is measured when it is non-negative; -1: unknown (an older message, or a
    // reply that ended before it was measured).
    int promptTokens = -1;
    int cachedTokens = -1;  // prompt tokens from the prefix cache, memory or disk
    int diskTokens = -1;    // of cachedTokens, the ones read from the KV disk tier
    int generatedTokens = -1;
    double timeToFirstTokenMs = -1.0;
    double tokensPerSecond = -1.0;
    int omittedMessages = 0;  // oldest messages of the path its prompt left out
    FinishReason finishReason = FinishReason::None;
    QString error;  // why, when finishReason is Error

    static ReplyStats fromEngine(const arbor::RequestStats& stats, arbor::FinishReason reason,
                                 const std::string& error);
    static ReplyStats fromMessage(const arbor::MessageStats& stats);
    arbor::MessageStats toMessage() const;

    bool operator==(const ReplyStats&) const = default;
};

// The finish reason as the store keeps it, and back (an unknown text reads as an error
// whose message is that text, so nothing stored is lost).
std::string storedFinishReason(ReplyStats::FinishReason reason, const QString& error);
ReplyStats::FinishReason finishReasonFromStored(const std::string& stored, QString* error = nullptr);

// Gives QML the gadget's enum under the gadget's name (ReplyStats.Cancelled); a value
// type itself cannot be named with a capital in QML.
namespace ReplyStatsEnums {
Q_NAMESPACE
QML_FOREIGN_NAMESPACE(arbor::app::ReplyStats)
QML_NAMED_ELEMENT(ReplyStats)
} // namespace ReplyStatsEnums

} // namespace arbor::app

Q_DECLARE_METATYPE(arbor::app::ReplyStats)
