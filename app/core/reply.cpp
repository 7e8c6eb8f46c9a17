#include "reply.h"

namespace arbor::app {

Reply::Reply(quint64 id, std::function<void(quint64)> cancel, QObject* parent)
    : QObject(parent), id_(id), cancel_(std::move(cancel)) {}

void Reply::cancel() {
    if (!finished_) cancel_(id_);
}

void Reply::finish(const ReplyStats& stats) {
    finished_ = true;
    emit finished(stats);
    deleteLater();
}

} // namespace arbor::app
