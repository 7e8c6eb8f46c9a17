#include "store_worker.h"

#include <QMetaObject>

namespace arbor::app {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

} // namespace

StoreWorker::StoreWorker(std::filesystem::path file) : file_(std::move(file)) {}
StoreWorker::~StoreWorker() = default;

void StoreWorker::open() {
    try {
        store_ = std::make_unique<arbor::Store>(file_);
        emit opened(qs(store_->open_report().problem));
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

bool StoreWorker::ready() {
    if (!store_) emit failed(QStringLiteral("the database is not open"));
    return bool(store_);
}

void StoreWorker::listConversations(quint64 ticket, const QString& filter) {
    if (!ready()) return;
    try {
        QList<ConversationRow> rows;
        const QString query = filter.trimmed();
        if (query.isEmpty()) {
            for (const auto& c : store_->list_conversations()) rows.push_back({c.id, qs(c.title), c.updated_at});
        } else {
            for (const auto& hit : store_->search(query.toStdString())) {
                const auto c = store_->conversation(hit.conversation_id);
                rows.push_back({c.id, qs(c.title), c.updated_at});
            }
        }
        emit conversationsListed(ticket, rows);
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

void StoreWorker::createConversation(const QString& title) {
    if (!ready()) return;
    try {
        const auto id = store_->create_conversation(title.toStdString());
        emit conversationCreated(id);
        emit conversationsChanged();
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

void StoreWorker::renameConversation(qint64 id, const QString& title) {
    if (!ready()) return;
    try {
        store_->rename_conversation(id, title.toStdString());
        emit conversationsChanged();
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

void StoreWorker::deleteConversation(qint64 id) {
    if (!ready()) return;
    try {
        store_->delete_conversation(id);
        emit conversationsChanged();
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

StoreService::StoreService(std::filesystem::path file, QObject* parent)
    : QObject(parent), worker_(new StoreWorker(std::move(file))) {
    qRegisterMetaType<arbor::app::ConversationRow>();
    qRegisterMetaType<QList<arbor::app::ConversationRow>>();
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_.setObjectName(QStringLiteral("arbor-store"));
    thread_.start();
}

void StoreService::open() {
    post([](StoreWorker& w) { w.open(); });
}

StoreService::~StoreService() {
    // Every job posted so far still runs (the final writes of closing tabs among them);
    // their answers are dropped with this object. The worker (and its Store) is deleted
    // on its own thread once the loop has stopped.
    QThread* thread = &thread_;
    post([thread](StoreWorker&) { thread->quit(); });
    thread_.wait();
}

void StoreService::post(std::function<void(StoreWorker&)> job) {
    StoreWorker* w = worker_;
    QMetaObject::invokeMethod(w, [w, job = std::move(job)] { job(*w); }, Qt::QueuedConnection);
}

} // namespace arbor::app
