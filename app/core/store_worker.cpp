#include "store_worker.h"

#include <QMetaObject>

namespace arbor::app {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

} // namespace

QVariantMap statsToMap(const arbor::MessageStats& s) {
    QVariantMap m;
    if (s.prompt_tokens) m["promptTokens"] = *s.prompt_tokens;
    if (s.cached_tokens) m["cachedTokens"] = *s.cached_tokens;
    if (s.disk_tokens) m["diskTokens"] = *s.disk_tokens;
    if (s.ttft_ms) m["ttftMs"] = *s.ttft_ms;
    if (s.tokens_per_second) m["tokensPerSecond"] = *s.tokens_per_second;
    if (!s.finish_reason.empty()) m["finishReason"] = qs(s.finish_reason);
    if (s.omitted_messages) m["omittedMessages"] = *s.omitted_messages;
    return m;
}

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

std::vector<arbor::Message> StoreWorker::siblingsOf(const arbor::Message& m) const {
    return m.parent_id ? store_->children(*m.parent_id) : store_->roots(m.conversation_id);
}

void StoreWorker::emitPath(quint64 ticket, qint64 conversation, arbor::MessageId leaf) {
    QList<MessageRow> rows;
    if (leaf != 0) {
        for (const auto& m : store_->path(leaf)) {
            MessageRow row{m.id, m.parent_id.value_or(0), qs(arbor::to_string(m.role)), qs(m.text),
                           qs(arbor::to_string(m.state)), statsToMap(m.stats), 0, 1, int(m.token_ids.size())};
            const auto siblings = siblingsOf(m);
            row.branchCount = int(siblings.size());
            for (size_t i = 0; i < siblings.size(); ++i)
                if (siblings[i].id == m.id) row.branchIndex = int(i);
            rows.push_back(std::move(row));
        }
    }
    emit pathLoaded(ticket, conversation, rows);
}

void StoreWorker::loadPath(quint64 ticket, qint64 conversation, qint64 from) {
    if (!ready()) return;
    try {
        arbor::MessageId leaf = 0;
        if (from == 0) {
            leaf = store_->latest_leaf(conversation).value_or(0);
        } else {
            if (store_->message(from).conversation_id != conversation)
                throw arbor::StoreError(arbor::StoreError::Kind::invalid, "message is not in this conversation");
            leaf = from;
            for (auto kids = store_->children(leaf); !kids.empty(); kids = store_->children(leaf))
                leaf = kids.back().id;
        }
        emitPath(ticket, conversation, leaf);
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

void StoreWorker::loadSiblingPath(quint64 ticket, qint64 conversation, qint64 at, int offset) {
    if (!ready()) return;
    try {
        const auto siblings = siblingsOf(store_->message(at));
        int index = 0;
        for (size_t i = 0; i < siblings.size(); ++i)
            if (siblings[i].id == at) index = int(i);
        const int target = std::clamp(index + offset, 0, int(siblings.size()) - 1);
        loadPath(ticket, conversation, siblings[size_t(target)].id);
    } catch (const std::exception& e) {
        emit failed(QString::fromUtf8(e.what()));
    }
}

StoreService::StoreService(std::filesystem::path file, QObject* parent)
    : QObject(parent), worker_(new StoreWorker(std::move(file))) {
    qRegisterMetaType<arbor::app::ConversationRow>();
    qRegisterMetaType<arbor::app::MessageRow>();
    qRegisterMetaType<QList<arbor::app::ConversationRow>>();
    qRegisterMetaType<QList<arbor::app::MessageRow>>();
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
