// One request to the engine (or to a remote server: remote_chat_stream.h) as the GUI
// thread sees it: its tokens, its prompt progress and its end arrive as this object's
// signals, and only its requester listens. The bridge that started it owns it and
// deletes it (later) once it finished, or when the bridge goes (then it finishes
// nothing: the model is being unloaded); hold it in a QPointer.
#pragma once

#include "reply_stats.h"

#include <QObject>
#include <QString>

#include <functional>

namespace arbor::app {

class Reply : public QObject {
    Q_OBJECT
public:
    using FinishReason = ReplyStats::FinishReason;

    quint64 id() const { return id_; }
    bool isFinished() const { return finished_; }
    // Asks the engine to stop; finished(Cancelled) follows unless it had just finished.
    void cancel();

signals:
    // tokenId is -1 for text without an id: held back (a possible stop string) and flushed
    // at the end, or a remote server's (remote_chat_stream.h).
    void token(int tokenId, const QString& text);
    // After each chunk of a long prompt but the last: `done` of its `total` tokens are computed.
    void progress(int done, int total);
    // The last signal; stats.finishReason says why (with stats.error for an error).
    void finished(const arbor::app::ReplyStats& stats);

private:
    friend class EngineBridge;
    friend class RemoteChatStream;
    Reply(quint64 id, std::function<void(quint64)> cancel, QObject* parent);
    void finish(const ReplyStats& stats);

    const quint64 id_;
    std::function<void(quint64)> cancel_;
    bool finished_ = false;
};

} // namespace arbor::app
