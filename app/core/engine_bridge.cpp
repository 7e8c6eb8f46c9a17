#include "engine_bridge.h"

#include <QMetaObject>

#include <mutex>

namespace arbor::app {

// A sink posts under the mutex, so once the destructor has cleared `bridge` no sink can
// post to it again; events already posted die with the QObject.
struct EngineBridge::Gate {
    std::mutex mutex;
    EngineBridge* bridge = nullptr;
};

EngineBridge::EngineBridge(arbor::Engine& engine, QObject* parent)
    : QObject(parent), engine_(engine), gate_(std::make_shared<Gate>()) {
    qRegisterMetaType<arbor::app::ReplyStats>();
    gate_->bridge = this;
}

EngineBridge::~EngineBridge() {
    {
        std::lock_guard lock(gate_->mutex);
        gate_->bridge = nullptr;
    }
    for (auto it = running_.cbegin(); it != running_.cend(); ++it) engine_.cancel(it.key());
}

Reply* EngineBridge::submit(arbor::Request request) {
    const auto id = engine_.submit(std::move(request), [gate = gate_](const arbor::Event& event) {
        std::lock_guard lock(gate->mutex);
        if (!gate->bridge) return;
        EngineBridge* bridge = gate->bridge;
        QMetaObject::invokeMethod(bridge, [bridge, event] { bridge->deliver(event); }, Qt::QueuedConnection);
    });
    // Events are queued to this thread, so none is delivered before the Reply exists.
    auto* reply = new Reply(id, [this](quint64 requestId) { cancel(requestId); }, this);
    running_.insert(id, reply);
    return reply;
}

void EngineBridge::cancel(quint64 requestId) {
    engine_.cancel(requestId);
}

void EngineBridge::deliver(const arbor::Event& event) {
    Reply* reply = running_.value(event.id);
    if (event.kind == arbor::Event::Kind::Finished) running_.remove(event.id);
    if (!reply) return;
    switch (event.kind) {
    case arbor::Event::Kind::Token:
        emit reply->token(event.token, QString::fromStdString(event.text));
        break;
    case arbor::Event::Kind::Progress:
        emit reply->progress(event.prefilled, event.stats.prompt_tokens);
        break;
    case arbor::Event::Kind::Finished:
        reply->finish(ReplyStats::fromEngine(event.stats, event.finish, event.error));
        break;
    }
}

} // namespace arbor::app
