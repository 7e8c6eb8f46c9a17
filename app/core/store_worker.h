// The only code of the app that touches SQLite. A StoreWorker lives on the thread of a
// StoreService and answers requests with queued signals; the GUI thread posts requests
// with StoreService::post and never calls the worker directly.
#pragma once

#include "arbor/store.h"

#include <QList>
#include <QMetaObject>
#include <QPointer>
#include <QObject>
#include <QString>
#include <QThread>

#include <filesystem>
#include <functional>
#include <memory>
#include <type_traits>

namespace arbor::app {

struct ConversationRow {
    qint64 id = 0;
    QString title;
    qint64 updatedAt = 0;  // ms since the epoch
};

class StoreWorker : public QObject {
    Q_OBJECT
public:
    explicit StoreWorker(std::filesystem::path file);
    ~StoreWorker() override;

    // Worker-thread calls (through StoreService::post). Each answers with a signal;
    // StoreError becomes failed().
    void open();
    void listConversations(quint64 ticket, const QString& filter);
    void createConversation(const QString& title);
    void renameConversation(qint64 id, const QString& title);
    void deleteConversation(qint64 id);

    arbor::Store* store() { return store_.get(); }  // worker thread only

signals:
    void opened(const QString& problem);
    void conversationsListed(quint64 ticket, const QList<arbor::app::ConversationRow>& rows);
    void conversationCreated(qint64 id);
    void conversationsChanged();
    void failed(const QString& message);

private:
    bool ready();

    std::filesystem::path file_;
    std::unique_ptr<arbor::Store> store_;
};

// Owns the worker thread (threadedsonglist style): quit() + wait() on destruction.
class StoreService : public QObject {
    Q_OBJECT
public:
    explicit StoreService(std::filesystem::path file, QObject* parent = nullptr);
    ~StoreService() override;

    // Opens the database on the worker thread; connect to the worker's opened() and
    // failed() first. Requests posted earlier fail with "not open".
    void open();

    StoreWorker* worker() const { return worker_; }  // for connections only
    // Runs `job` on the worker thread, after every job posted before it.
    void post(std::function<void(StoreWorker&)> job);
    // Tags a request so its requester recognises the answer (answers are broadcast).
    quint64 nextTicket() { return ++tickets_; }

    // Runs job(store) on the worker thread, then done(result) (or done() for a void job)
    // on this service's thread. An exception, or a database that is not open, calls
    // failed(message) instead, or, without `failed`, emits the worker's failed(). The
    // answer is dropped when `receiver` (an object of this thread) is gone by then.
    template <class Job, class Done>
    void call(QObject* receiver, Job job, Done done, std::function<void(const QString&)> failed = {});

private:
    quint64 tickets_ = 0;
    QThread thread_;
    StoreWorker* worker_;
};

template <class Job, class Done>
void StoreService::call(QObject* receiver, Job job, Done done, std::function<void(const QString&)> failed) {
    QPointer<QObject> guard(receiver);
    post([this, guard, job = std::move(job), done = std::move(done), failed = std::move(failed)](StoreWorker& w) mutable {
        // Answers go through this service (alive as long as its worker) and are checked
        // against the guard on this thread, where the receiver is deleted.
        auto fail = [&](const QString& message) {
            if (failed)
                QMetaObject::invokeMethod(this, [guard, failed, message] { if (guard) failed(message); },
                                          Qt::QueuedConnection);
            else
                emit w.failed(message);
        };
        if (!w.store()) return fail(QStringLiteral("the database is not open"));
        try {
            using Result = std::invoke_result_t<Job&, arbor::Store&>;
            if constexpr (std::is_void_v<Result>) {
                job(*w.store());
                QMetaObject::invokeMethod(this, [guard, done = std::move(done)]() mutable { if (guard) done(); },
                                          Qt::QueuedConnection);
            } else {
                Result result = job(*w.store());
                QMetaObject::invokeMethod(
                    this,
                    [guard, done = std::move(done), result = std::move(result)]() mutable {
                        if (guard) done(std::move(result));
                    },
                    Qt::QueuedConnection);
            }
        } catch (const std::exception& e) {
            fail(QString::fromUtf8(e.what()));
        }
    });
}

} // namespace arbor::app

Q_DECLARE_METATYPE(arbor::app::ConversationRow)
