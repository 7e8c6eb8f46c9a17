// The sidebar model: checked by QAbstractItemModelTester while it loads, filters,
// creates, renames and deletes through the store worker.
#include "conversation_list_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using arbor::app::ConversationListModel;
using arbor::app::StoreService;

namespace {

QStringList titles(const ConversationListModel& model) {
    QStringList out;
    for (int i = 0; i < model.rowCount(); ++i)
        out << model.data(model.index(i), ConversationListModel::TitleRole).toString();
    return out;
}

} // namespace

class TestConversationListModel : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::filesystem::path file() const { return std::filesystem::path(dir_.path().toStdString()) / "arbor.db"; }

private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void loadsNewestActivityFirst() {
        qint64 old_id;
        {
            arbor::Store store(file());
            old_id = store.create_conversation("Old but active");
            store.create_conversation("Quiet");
            QTest::qWait(5);
            store.add_message(old_id, std::nullopt, arbor::Role::User, "bump", {});
        }
        StoreService service(file());
        ConversationListModel model(service);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
        QSignalSpy loaded(&model, &ConversationListModel::loaded);
        service.open();
        model.reload();
        QVERIFY(loaded.wait(10000));
        QCOMPARE(titles(model), (QStringList{"Old but active", "Quiet"}));
        const QModelIndex first = model.index(0);
        QCOMPARE(model.data(first, ConversationListModel::IdRole).toLongLong(), old_id);
        QVERIFY(model.data(first, ConversationListModel::UpdatedAtRole).toDateTime().isValid());
        QCOMPARE(model.roleNames().value(ConversationListModel::UpdatedAtRole), QByteArray("updatedAt"));
    }

    void createRenameFilterDelete() {
        StoreService service(file());
        ConversationListModel model(service);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
        QSignalSpy created(&model, &ConversationListModel::created);
        service.open();
        model.reload();
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 2, 10000);

        model.create("Rivers of Europe");
        QVERIFY(created.wait(10000));
        const qint64 rivers = created.at(0).at(0).toLongLong();
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 3, 10000);
        QCOMPARE(model.rowOf(rivers), 0);  // ties in activity: the newest id first

        model.rename(rivers, "Rivers and lakes");
        QTRY_COMPARE_WITH_TIMEOUT(model.data(model.index(model.rowOf(rivers)), ConversationListModel::TitleRole).toString(),
                                  QString("Rivers and lakes"), 10000);

        QSignalSpy filterChanged(&model, &ConversationListModel::filterChanged);
        model.setFilter("lakes");
        QCOMPARE(filterChanged.size(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(titles(model), QStringList{"Rivers and lakes"}, 10000);
        model.setFilter("no such words anywhere");
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 0, 10000);
        model.setFilter("");
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 3, 10000);

        const int quiet_row = int(titles(model).indexOf("Quiet"));
        QVERIFY(quiet_row >= 0);
        const qint64 quiet = model.data(model.index(quiet_row), ConversationListModel::IdRole).toLongLong();
        model.remove(quiet);
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 2, 10000);
        QCOMPARE(model.rowOf(quiet), -1);
        QCOMPARE(titles(model), (QStringList{"Rivers and lakes", "Old but active"}));
    }

    void failuresAreReported() {
        StoreService service(file());
        ConversationListModel model(service);
        QSignalSpy error(&model, &ConversationListModel::error);
        service.open();
        model.rename(424242, "ghost");
        QVERIFY(error.wait(10000));
        QVERIFY(!error.at(0).at(0).toString().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestConversationListModel)
#include "test_conversation_list_model.moc"
