#include "engine_bridge.h"

#include <QMetaObject>

#include <mutex>

namespace arbor::app {

namespace {
QString finishName(arbor::FinishReason reason) {
    const std::string_view name = arbor::finish_reason_name(reason);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}
} // namespace

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
    for (quint64 id : std::as_const(running_)) engine_.cancel(id);
}

quint64 EngineBridge::submit(arbor::Request request) {
    const auto id = engine_.submit(std::move(request), [gate = gate_](const arbor::Event& event) {
        std::lock_guard lock(gate->mutex);
        if (!gate->bridge) return;
        EngineBridge* bridge = gate->bridge;
        QMetaObject::invokeMethod(bridge, [bridge, event] { bridge->deliver(event); }, Qt::QueuedConnection);
    });
    // Events are queued to this thread, so none is delivered before the id is known here.
    running_.insert(id);
    return id;
}

void EngineBridge::cancel(quint64 requestId) {
    engine_.cancel(requestId);
}

void EngineBridge::deliver(const arbor::Event& event) {
    if (event.kind == arbor::Event::Kind::Token) {
        emit tokenReceived(event.id, event.token, QString::fromStdString(event.text));
        return;
    }
    if (event.kind == arbor::Event::Kind::Progress) {
        emit prefillProgress(event.id, event.prefilled, event.stats.prompt_tokens);
        return;
    }
    running_.remove(event.id);
    ReplyStats stats;
    stats.promptTokens = event.stats.prompt_tokens;
    stats.cachedTokens = event.stats.cached_tokens;
    stats.diskTokens = event.stats.disk_tokens;
    stats.generatedTokens = event.stats.generated_tokens;
    stats.timeToFirstTokenMs = event.stats.time_to_first_token_ms;
    stats.tokensPerSecond = event.stats.decode_tokens_per_second;
    emit finished(event.id, finishName(event.finish),
                  QString::fromStdString(event.error), stats);
}

} // namespace arbor::app
