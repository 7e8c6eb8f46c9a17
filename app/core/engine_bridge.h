// Hands engine events to the thread the bridge lives on (the GUI thread), each to the
// Reply of its request. The engine calls its sinks on its loop thread; the bridge only
// posts queued calls from there, so every Reply signal is emitted, and every slot
// connected to it runs, on the bridge's thread.
#pragma once

#include "arbor/engine.h"
#include "reply.h"

#include <QHash>
#include <QObject>
#include <QPointer>

#include <memory>

namespace arbor::app {

class EngineBridge : public QObject {
    Q_OBJECT
public:
    // The engine must outlive the bridge. Requests still running when the bridge is
    // destroyed are cancelled; their Replies are deleted without finishing.
    explicit EngineBridge(arbor::Engine& engine, QObject* parent = nullptr);
    ~EngineBridge() override;

    // The Reply belongs to the bridge: it is deleted once it has finished.
    Reply* submit(arbor::Request request);
    void cancel(quint64 requestId);
    bool isRunning(quint64 requestId) const { return running_.contains(requestId); }

private:
    struct Gate;  // shared with the sinks: the bridge, or null once it is gone
    void deliver(const arbor::Event& event);

    arbor::Engine& engine_;
    std::shared_ptr<Gate> gate_;
    QHash<quint64, QPointer<Reply>> running_;
};

} // namespace arbor::app
