// Warms the restored tabs at start: for each, one RequestKind::PrefillOnly request
// at Priority::Idle with the prompt its next message will begin with, so that the pages
// of its history are read from the KV disk tier (or computed) in the background and the
// first follow-up in any restored tab is served from the cache. The current tab goes
// first. Idle requests never delay anyone's (arbor/priority.h); a tab's warm-up is
// cancelled when the tab closes or starts a reply of its own (what it computed stays in
// the cache), and all of them when the model is unloaded. Warm-ups show nowhere in the
// UI: their events carry ids no ChatSession waits for.
#pragma once

#include "chat_session.h"
#include "model_service.h"
#include "store_worker.h"

#include <QList>
#include <QObject>

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
    void started(qint64 conversationId, quint64 requestId);
    // reason as ModelService::finished gives it ("length": warmed).
    void finished(qint64 conversationId, const QString& reason, const arbor::app::ReplyStats& stats);
    void settled();

private:
    struct Entry {
        qint64 conversation = 0;
        qint64 leaf = 0;
        quint64 request = 0;  // 0 while its prompt is composed
    };
    void startAll();
    void submit(qint64 conversation, std::vector<arbor::TokenId> prompt);
    void drop(qint64 conversation);  // cancels its warm-up, if any
    void onFinished(quint64 requestId, const QString& reason, const ReplyStats& stats);
    void settleIfDone();

    StoreService& store_;
    ModelService& models_;
    QList<Entry> entries_;
    bool waitingForModel_ = false;
    bool active_ = false;  // warm() ran and settled() has not followed yet
};

} // namespace arbor::app
