// The store worker: SQLite only on its own thread, answers by queued signals on the
// requester's thread, errors reported as failed().
#include "message_rows.h"
#include "store_worker.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using arbor::app::ConversationRow;
using arbor::app::MessageRow;
using arbor::app::StoreService;
using arbor::app::StoreWorker;

// The spies watch the worker, which emits on its own thread: a signal can be recorded
// before the test starts waiting, so the tests wait for counts, not for new emissions.
class TestStoreWorker : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    int n_ = 0;
    std::filesystem::path file_;

private slots:
    void init() {
        QVERIFY(dir_.isValid());
        file_ = std::filesystem::path(dir_.path().toStdString()) / ("db" + std::to_string(++n_)) / "arbor.db";
    }

    void worksOnItsOwnThreadAndAnswersOnTheCallers() {
        StoreService service(file_);
        QThread* worked_on = nullptr;
        QThread* answered_on = nullptr;
        // Direct: runs where the worker emits; queued to this object: runs on the test thread.
        connect(service.worker(), &StoreWorker::conversationCreated, this,
                [&] { worked_on = QThread::currentThread(); }, Qt::DirectConnection);
        connect(service.worker(), &StoreWorker::conversationCreated, this,
                [&] { answered_on = QThread::currentThread(); }, Qt::QueuedConnection);
        QSignalSpy opened(service.worker(), &StoreWorker::opened);
        QSignalSpy created(service.worker(), &StoreWorker::conversationCreated);
        QSignalSpy listed(service.worker(), &StoreWorker::conversationsListed);
        service.open();
        QTRY_VERIFY_WITH_TIMEOUT(opened.size() >= 1, 10000);
        QCOMPARE(opened.at(0).at(0).toString(), QString());

        service.post([](StoreWorker& w) { w.createConversation("Trip planning"); });
        QTRY_VERIFY_WITH_TIMEOUT(created.size() >= 1, 10000);
        QTRY_VERIFY(answered_on != nullptr);
        QVERIFY(worked_on != nullptr);
        QVERIFY(worked_on != QThread::currentThread());
        QCOMPARE(answered_on, QThread::currentThread());
        const qint64 id = created.at(0).at(0).toLongLong();
        QVERIFY(id > 0);

        const quint64 ticket = service.nextTicket();
        service.post([ticket](StoreWorker& w) { w.listConversations(ticket, {}); });
        QTRY_VERIFY_WITH_TIMEOUT(listed.size() >= 1, 10000);
        QCOMPARE(listed.at(0).at(0).toULongLong(), ticket);
        const auto rows = listed.at(0).at(1).value<QList<ConversationRow>>();
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows[0].id, id);
        QCOMPARE(rows[0].title, QString("Trip planning"));
        QVERIFY(rows[0].updatedAt > 0);
    }

    void writesReachTheFile() {
        qint64 id = 0;
        {
            StoreService service(file_);
            QSignalSpy created(service.worker(), &StoreWorker::conversationCreated);
            QSignalSpy changed(service.worker(), &StoreWorker::conversationsChanged);
            service.open();
            service.post([](StoreWorker& w) { w.createConversation("Draft"); });
            QTRY_VERIFY_WITH_TIMEOUT(created.size() >= 1, 10000);
            id = created.at(0).at(0).toLongLong();
            service.post([id](StoreWorker& w) { w.renameConversation(id, "Final"); });
            QTRY_COMPARE_WITH_TIMEOUT(changed.size(), 2, 10000);
        }
        arbor::Store store(file_);
        QCOMPARE(store.conversation(id).title, std::string("Final"));
    }

    void errorsComeBackAsFailed() {
        StoreService service(file_);
        QSignalSpy failed(service.worker(), &StoreWorker::failed);
        QSignalSpy opened(service.worker(), &StoreWorker::opened);
        service.post([](StoreWorker& w) { w.createConversation("too early"); });
        QTRY_VERIFY_WITH_TIMEOUT(failed.size() >= 1, 10000);
        QVERIFY(failed.at(0).at(0).toString().contains("not open"));
        service.open();
        QTRY_VERIFY_WITH_TIMEOUT(opened.size() >= 1, 10000);
        service.post([](StoreWorker& w) { w.renameConversation(987654, "nobody"); });
        QTRY_VERIFY_WITH_TIMEOUT(failed.size() >= 2, 10000);
        QCOMPARE(failed.size(), 2);
        QVERIFY(!failed.at(1).at(0).toString().isEmpty());
    }

    void pathsCarryBranchPositions() {
        arbor::MessageId u1, a1, a2, u2, a3;
        qint64 conv;
        {
            arbor::Store store(file_);
            conv = store.create_conversation("Tree");
            u1 = store.add_message(conv, std::nullopt, arbor::Role::User, "Hi", {});
            a1 = store.add_message(conv, u1, arbor::Role::Assistant, "Hello", {});
            a2 = store.add_message(conv, u1, arbor::Role::Assistant, "Hey there", {});
            u2 = store.add_message(conv, a1, arbor::Role::User, "How are you?", {});
            a3 = store.add_message(conv, u2, arbor::Role::Assistant, "Fine", {}, arbor::MessageState::streaming);
            store.finish_message(a3, arbor::MessageState::complete, {12, 8, 30.5, 55.0, "stop"});
        }
        StoreService service(file_);
        service.open();
        auto ids = [](const QList<MessageRow>& rows) {
            QList<qint64> out;
            for (const auto& r : rows) out.push_back(r.id);
            return out;
        };
        QList<QList<MessageRow>> loaded;
        auto read = [&](std::function<QList<MessageRow>(arbor::Store&)> job) -> QList<MessageRow> {
            service.call(this, std::move(job), [&](QList<MessageRow> rows) { loaded.push_back(rows); });
            if (!QTest::qWaitFor([&] { return loaded.size() == 1; }, 10000)) return {};
            return loaded.takeFirst();
        };
        auto rows = read([conv](arbor::Store& s) { return arbor::app::pathRows(s, conv, 0); });  // latest leaf: a3
        QCOMPARE(ids(rows), (QList<qint64>{u1, a1, u2, a3}));
        QCOMPARE(rows[1].branchIndex, 0);
        QCOMPARE(rows[1].branchCount, 2);
        QCOMPARE(rows[0].branchCount, 1);
        QCOMPARE(rows[1].role, arbor::Role::Assistant);
        QCOMPARE(rows[3].stats.cachedTokens, 8);
        QCOMPARE(rows[3].stats.finishReason, arbor::app::ReplyStats::FinishReason::Stop);

        rows = read([conv, a1](arbor::Store& s) { return arbor::app::siblingPathRows(s, conv, a1, +1); });
        QCOMPARE(ids(rows), (QList<qint64>{u1, a2}));
        QCOMPARE(rows[1].branchIndex, 1);
        QCOMPARE(rows[1].text, QString("Hey there"));

        // Newest child each step.
        QCOMPARE(ids(read([conv, u1](arbor::Store& s) { return arbor::app::pathRows(s, conv, u1); })),
                 (QList<qint64>{u1, a2}));

        // Another conversation's message is refused, not shown.
        QString refused;
        service.call(this, [conv, u1](arbor::Store& s) { return arbor::app::pathRows(s, conv + 1, u1); },
                     [](QList<MessageRow>) {}, [&](const QString& message) { refused = message; });
        QTRY_VERIFY_WITH_TIMEOUT(!refused.isEmpty(), 10000);
    }
};

QTEST_GUILESS_MAIN(TestStoreWorker)
#include "test_store_worker.moc"
