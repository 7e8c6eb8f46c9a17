#include "tab_warmer.h"

#include "conversation_prompt.h"

#include <algorithm>

namespace arbor::app {

TabWarmer::TabWarmer(StoreService& store, ModelService& models, QObject* parent)
    : QObject(parent), store_(store), models_(models) {
    // The bridge cancels every running request without further events.
    connect(&models_, &ModelService::aboutToUnload, this, [this] {
        entries_.clear();
        waitingForModel_ = false;
        settleIfDone();
    });
    connect(&models_, &ModelService::stateChanged, this, [this] {
        if (!waitingForModel_) return;
        if (models_.ready()) {
            startAll();
        } else if (models_.state() == QLatin1String("failed")) {
            entries_.clear();
            waitingForModel_ = false;
            settleIfDone();
        }
    });
}

void TabWarmer::warm(const QList<ChatSession*>& sessions) {
    for (ChatSession* s : sessions) {
        const qint64 conversation = s->conversationId();
        entries_.push_back({conversation, s->messages()->leafId(), 0});
        connect(s, &QObject::destroyed, this, [this, conversation] { drop(conversation); });
        connect(s, &ChatSession::generatingChanged, this, [this, s, conversation] {
            if (s->generating()) drop(conversation);
        });
    }
    active_ = true;
    if (entries_.isEmpty() || models_.state() == QLatin1String("failed")) entries_.clear();
    else if (models_.ready()) startAll();
    else waitingForModel_ = true;
    settleIfDone();
}

void TabWarmer::startAll() {
    waitingForModel_ = false;
    const auto model = models_.current();
    for (const Entry& e : std::as_const(entries_)) {
        const qint64 conversation = e.conversation, leaf = e.leaf;
        store_.call(
            this,
            [model, conversation, leaf, context = model->engine->context_size()](arbor::Store& s) {
                return leaf ? nextTurnPrefix(s, *model->formatter, conversation, leaf, context)
                            : std::vector<arbor::TokenId>{};
            },
            // Not the shared model: the last reference must never be dropped on this thread.
            [this, raw = model.get(), conversation](std::vector<arbor::TokenId> prompt) {
                if (models_.current().get() != raw) return;  // unloaded meanwhile: aboutToUnload dropped it
                submit(conversation, std::move(prompt));
            },
            [this, conversation](const QString&) { drop(conversation); });
    }
}

void TabWarmer::submit(qint64 conversation, std::vector<arbor::TokenId> prompt) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.conversation == conversation; });
    if (it == entries_.end()) return;  // closed or replying meanwhile
    if (prompt.empty()) {
        drop(conversation);
        return;
    }
    arbor::Request request;
    request.prompt = std::move(prompt);
    request.kind = arbor::RequestKind::PrefillOnly;
    request.priority = arbor::Priority::Idle;
    Reply* reply = models_.start(std::move(request));
    if (!reply) {
        drop(conversation);
        return;
    }
    it->reply = reply;
    connect(reply, &Reply::finished, this, [this, reply](const ReplyStats& stats) { onFinished(reply, stats); });
    emit started(conversation, reply);
}

void TabWarmer::drop(qint64 conversation) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.conversation == conversation; });
    if (it == entries_.end()) return;
    // Erased first: the Reply's finished(Cancelled) then finds no entry.
    const QPointer<Reply> reply = it->reply;
    entries_.erase(it);
    if (reply) reply->cancel();
    settleIfDone();
}

void TabWarmer::onFinished(const Reply* reply, const ReplyStats& stats) {
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.reply == reply; });
    if (it == entries_.end()) return;  // dropped: closed, replying or unloaded
    const qint64 conversation = it->conversation;
    entries_.erase(it);
    emit finished(conversation, stats);
    settleIfDone();
}

void TabWarmer::settleIfDone() {
    if (!active_ || !entries_.isEmpty() || waitingForModel_) return;
    active_ = false;
    emit settled();
}

} // namespace arbor::app
