// Hands engine events to the thread the bridge lives on (the GUI thread). The engine
// calls its sinks on its loop thread; the bridge only posts queued calls from there, so
// every signal is emitted, and every slot connected to it runs, on the bridge's thread.
#pragma once

#include "arbor/engine.h"

#include <QObject>
#include <QSet>
#include <QString>

#include <memory>

namespace arbor::app {

// Figures of a finished reply, readable from QML.
struct ReplyStats {
    Q_GADGET
    Q_PROPERTY(int promptTokens MEMBER promptTokens)
    Q_PROPERTY(int cachedTokens MEMBER cachedTokens)
    Q_PROPERTY(int diskTokens MEMBER diskTokens)
    Q_PROPERTY(int generatedTokens MEMBER generatedTokens)
    Q_PROPERTY(double timeToFirstTokenMs MEMBER timeToFirstTokenMs)
    Q_PROPERTY(double tokensPerSecond MEMBER tokensPerSecond)
public:
    int promptTokens = 0;
    int cachedTokens = 0;  // prompt tokens from the prefix cache, memory or disk
    int diskTokens = 0;    // of cachedTokens, the ones read from the KV disk tier
    int generatedTokens = 0;
    double timeToFirstTokenMs = 0.0;
    double tokensPerSecond = 0.0;
};

class EngineBridge : public QObject {
    Q_OBJECT
public:
    // The engine must outlive the bridge. Requests still running when the bridge is
    // destroyed are cancelled; their remaining events are dropped.
    explicit EngineBridge(arbor::Engine& engine, QObject* parent = nullptr);
    ~EngineBridge() override;

    quint64 submit(arbor::Request request);
    void cancel(quint64 requestId);
    bool isRunning(quint64 requestId) const { return running_.contains(requestId); }

signals:
    void tokenReceived(quint64 requestId, int tokenId, const QString& text);
    // After each chunk of a long prompt but the last: `done` of its `total` tokens are computed.
    void prefillProgress(quint64 requestId, int done, int total);
    // reason: "stop", "length", "cancelled" or "error" (then error says why).
    void finished(quint64 requestId, const QString& reason, const QString& error,
                  const arbor::app::ReplyStats& stats);

private:
    struct Gate;  // shared with the sinks: the bridge, or null once it is gone
    void deliver(const arbor::Event& event);

    arbor::Engine& engine_;
    std::shared_ptr<Gate> gate_;
    QSet<quint64> running_;
};

} // namespace arbor::app

Q_DECLARE_METATYPE(arbor::app::ReplyStats)
