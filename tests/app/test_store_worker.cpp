// The store worker: SQLite only on its own thread, answers by queued signals on the
// requester's thread, errors reported as failed().
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
        QSignalSpy loaded(service.worker(), &StoreWorker::pathLoaded);
        service.open();
        auto ids = [](const QList<MessageRow>& rows) {
            QList<qint64> out;
            for (const auto& r : rows) out.push_back(r.id);
            return out;
        };
        service.post([conv](StoreWorker& w) { w.loadPath(1, conv, 0); });  // latest leaf: a3
        QTRY_VERIFY_WITH_TIMEOUT(loaded.size() >= 1, 10000);
        auto rows = loaded.at(0).at(2).value<QList<MessageRow>>();
        QCOMPARE(ids(rows), (QList<qint64>{u1, a1, u2, a3}));
        QCOMPARE(rows[1].branchIndex, 0);
        QCOMPARE(rows[1].branchCount, 2);
        QCOMPARE(rows[0].branchCount, 1);
        QCOMPARE(rows[1].role, QString("assistant"));
        QCOMPARE(rows[3].stats.value("cachedTokens").toInt(), 8);
        QCOMPARE(rows[3].stats.value("finishReason").toString(), QString("stop"));

        service.post([conv, a1](StoreWorker& w) { w.loadSiblingPath(2, conv, a1, +1); });
        QTRY_VERIFY_WITH_TIMEOUT(loaded.size() >= 2, 10000);
        rows = loaded.at(1).at(2).value<QList<MessageRow>>();
        QCOMPARE(ids(rows), (QList<qint64>{u1, a2}));
        QCOMPARE(rows[1].branchIndex, 1);
        QCOMPARE(rows[1].text, QString("Hey there"));

        service.post([conv, u1](StoreWorker& w) { w.loadPath(3, conv, u1); });  // newest child each step
        QTRY_VERIFY_WITH_TIMEOUT(loaded.size() >= 3, 10000);
        QCOMPARE(ids(loaded.at(2).at(2).value<QList<MessageRow>>()), (QList<qint64>{u1, a2}));
    }
};

QTEST_GUILESS_MAIN(TestStoreWorker)
#include "test_store_worker.moc"
