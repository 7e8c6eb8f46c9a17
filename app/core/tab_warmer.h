// Warms the restored tabs at start: for each, one RequestKind::PrefillOnly request
// at Priority::Idle with the prompt its next message will begin with, so that the pages
// of its history are read from the KV disk tier (or computed) in the background and the
// first follow-up in any restored tab is served from the cache. The current tab goes
// first. Idle requests never delay anyone's (arbor/priority.h); a tab's warm-up is
// cancelled when the tab closes or starts a reply of its own (what it computed stays in
// the cache), and all of them when the model is unloaded. Warm-ups show nowhere in the
// UI: their Replies are heard by this warmer alone.
#pragma once

#include "chat_session.h"
#include "model_service.h"
#include "store_worker.h"

#include <QList>
#include <QObject>
#include <QPointer>

namespace arbor::app {

class TabWarmer : public QObject {
    Q_OBJECT
public:
    TabWarmer(StoreService& store, ModelService& models, QObject* parent = nullptr);

    // Warms the sessions' branches as they are shown now, once a model is ready (the one
    // loading at start); settled() follows when every warm-up has finished or was
    // cancelled, at once when there is nothing to warm or the model fails to load.
    void warm(const QList<ChatSession*>& sessions);
    bool busy() const { return !entries_.isEmpty(); }

signals:
    // A tab's warm-up was submitted: its Reply, for observers of its events (it ends in
    // finished(Cancelled) when the tab closes or starts a reply of its own).
    void started(qint64 conversationId, arbor::app::Reply* reply);
    // A warm-up ran to its end: stats.finishReason is Length when it warmed the tab's
    // history (Error with stats.error when it could not).
    void finished(qint64 conversationId, const arbor::app::ReplyStats& stats);
    void settled();

private:
    struct Entry {
        qint64 conversation = 0;
        qint64 leaf = 0;
        QPointer<Reply> reply;  // null while its prompt is composed
    };
    void startAll();
    void submit(qint64 conversation, std::vector<arbor::TokenId> prompt);
    void drop(qint64 conversation);  // cancels its warm-up, if any
    void onFinished(const Reply* reply, const ReplyStats& stats);
    void settleIfDone();

    StoreService& store_;
    ModelService& models_;
    QList<Entry> entries_;
    bool waitingForModel_ = false;
    bool active_ = false;  // warm() ran and settled() has not followed yet
};

} // namespace arbor::app
