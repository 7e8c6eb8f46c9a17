// The open tabs over a real database (no model needed): opening, switching, closing with
// the current tab kept right, wrapping navigation, saving the tabs with their branch and
// the active one, and restoring them in a later run. QAbstractItemModelTester watches
// the model throughout.
#include "tab_list_model.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using arbor::app::ChatSession;
using arbor::app::ModelService;
using arbor::app::StoreService;
using arbor::app::TabListModel;
using arbor::OpenTab;

namespace {

constexpr int kWaitMs = 10000;

} // namespace

class TestTabListModel : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    int n_ = 0;
    std::filesystem::path file_;
    // Fixture conversations: Alpha has a user message with two replies (r1, then r2),
    // Beta one message, Gamma and Delta none.
    qint64 a_ = 0, b_ = 0, c_ = 0, d_ = 0;
    arbor::MessageId u1_ = 0, r1_ = 0, r2_ = 0, bMsg_ = 0;

    std::unique_ptr<StoreService> service_;
    ModelService models_;  // nothing loaded
    std::unique_ptr<TabListModel> tabs_;
    std::unique_ptr<QAbstractItemModelTester> tester_;

    void start() {
        service_ = std::make_unique<StoreService>(file_);
        service_->open();
        tabs_ = std::make_unique<TabListModel>(*service_, models_);
        tester_ = std::make_unique<QAbstractItemModelTester>(tabs_.get(),
                                                             QAbstractItemModelTester::FailureReportingMode::Fatal);
    }
    void stop() {  // the service finishes its queued writes before it goes
        tester_.reset();
        tabs_.reset();
        service_.reset();
    }

    QList<qint64> conversations() const {
        QList<qint64> out;
        for (int i = 0; i < tabs_->rowCount(); ++i)
            out << tabs_->data(tabs_->index(i), TabListModel::ConversationIdRole).toLongLong();
        return out;
    }
    QString title(int row) const { return tabs_->data(tabs_->index(row), TabListModel::TitleRole).toString(); }
    qint64 currentConversation() const { return tabs_->current() ? tabs_->current()->conversationId() : 0; }

    std::vector<OpenTab> savedTabs() const {
        arbor::Store store(file_);  // a second connection, as another process would read it
        return store.open_tabs();
    }

    // Opens the four fixture conversations in order and waits for their titles.
    bool openAll() {
        for (qint64 id : {a_, b_, c_, d_}) tabs_->openConversation(id);
        return QTest::qWaitFor([&] { return title(3) == "Delta" && title(0) == "Alpha"; }, kWaitMs);
    }

private slots:
    void init() {
        QVERIFY(dir_.isValid());
        file_ = std::filesystem::path(dir_.path().toStdString()) / ("db" + std::to_string(++n_)) / "arbor.db";
        arbor::Store store(file_);
        a_ = store.create_conversation("Alpha");
        u1_ = store.add_message(a_, std::nullopt, arbor::Role::User, "Hi", {});
        r1_ = store.add_message(a_, u1_, arbor::Role::Assistant, "Hello", {});
        r2_ = store.add_message(a_, u1_, arbor::Role::Assistant, "Hey", {});
        b_ = store.create_conversation("Beta");
        bMsg_ = store.add_message(b_, std::nullopt, arbor::Role::User, "Only one", {});
        c_ = store.create_conversation("Gamma");
        d_ = store.create_conversation("Delta");
    }
    void cleanup() { stop(); }

    void startsEmpty() {
        start();
        QCOMPARE(tabs_->rowCount(), 0);
        QCOMPARE(tabs_->currentIndex(), -1);
        QVERIFY(!tabs_->current());
        QVERIFY(!tabs_->sessionAt(0));
        tabs_->nextTab();
        tabs_->previousTab();
        tabs_->closeTab(0);
        tabs_->setCurrentIndex(3);
        QCOMPARE(tabs_->currentIndex(), -1);
        const auto roles = tabs_->roleNames();
        QCOMPARE(roles.value(TabListModel::SessionRole), QByteArray("session"));
        QCOMPARE(roles.value(TabListModel::ConversationIdRole), QByteArray("conversationId"));
        QCOMPARE(roles.value(TabListModel::TitleRole), QByteArray("title"));
        QCOMPARE(roles.value(TabListModel::GeneratingRole), QByteArray("generating"));
    }

    void newConversationOpensAndBecomesCurrent() {
        start();
        QVERIFY(openAll());
        tabs_->setCurrentIndex(1);
        QSignalSpy activity(tabs_.get(), &TabListModel::conversationActivity);
        QSignalSpy count(tabs_.get(), &TabListModel::countChanged);
        tabs_->newConversation();
        QTRY_COMPARE_WITH_TIMEOUT(tabs_->rowCount(), 5, kWaitMs);
        QCOMPARE(count.size(), 1);
        QCOMPARE(tabs_->currentIndex(), 4);
        const qint64 id = currentConversation();
        QVERIFY(id != 0 && !QList<qint64>({a_, b_, c_, d_}).contains(id));
        QCOMPARE(activity.size(), 1);
        QCOMPARE(activity.at(0).at(0).toLongLong(), id);
        QCOMPARE(title(4), QString("New conversation"));  // untitled until its first message
        QCOMPARE(tabs_->current()->messages()->rowCount(), 0);
        QCOMPARE(tabs_->data(tabs_->index(4), TabListModel::GeneratingRole).toBool(), false);
        QCOMPARE(tabs_->data(tabs_->index(4), TabListModel::SessionRole).value<ChatSession*>(), tabs_->current());
        arbor::Store store(file_);
        QCOMPARE(store.conversation(id).title, std::string());
    }

    void openingAnOpenConversationSwitchesToIt() {
        start();
        QSignalSpy current(tabs_.get(), &TabListModel::currentChanged);
        tabs_->openConversation(a_);
        QCOMPARE(tabs_->currentIndex(), 0);
        QCOMPARE(current.size(), 1);
        tabs_->openConversation(b_);
        tabs_->openConversation(c_);
        QCOMPARE(conversations(), (QList<qint64>{a_, b_, c_}));
        QCOMPARE(tabs_->currentIndex(), 2);
        ChatSession* first = tabs_->sessionAt(0);
        tabs_->openConversation(a_);
        QCOMPARE(conversations(), (QList<qint64>{a_, b_, c_}));
        QCOMPARE(tabs_->currentIndex(), 0);
        QCOMPARE(tabs_->current(), first);  // the same session, not a new one
        QCOMPARE(tabs_->indexOf(c_), 2);
        QCOMPARE(tabs_->indexOf(987654), -1);
        QTRY_COMPARE_WITH_TIMEOUT(title(0), QString("Alpha"), kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(title(2), QString("Gamma"), kWaitMs);
        // The session shows its conversation's latest branch.
        QTRY_COMPARE_WITH_TIMEOUT(first->messages()->leafId(), qint64(r2_), kWaitMs);
    }

    void closingKeepsTheCurrentTab() {
        start();
        QVERIFY(openAll());
        tabs_->setCurrentIndex(2);  // Gamma
        QCOMPARE(currentConversation(), c_);
        QSignalSpy current(tabs_.get(), &TabListModel::currentChanged);

        tabs_->closeTab(0);  // before the current tab
        QCOMPARE(conversations(), (QList<qint64>{b_, c_, d_}));
        QCOMPARE(tabs_->currentIndex(), 1);
        QCOMPARE(currentConversation(), c_);
        QVERIFY(current.size() >= 1);

        tabs_->closeTab(2);  // after it
        QCOMPARE(conversations(), (QList<qint64>{b_, c_}));
        QCOMPARE(tabs_->currentIndex(), 1);
        QCOMPARE(currentConversation(), c_);

        tabs_->closeTab(7);  // out of range: ignored
        tabs_->closeTab(-1);
        QCOMPARE(tabs_->rowCount(), 2);

        tabs_->openConversation(d_);  // [Beta, Gamma, Delta], Delta current
        tabs_->setCurrentIndex(1);
        tabs_->closeTab(1);  // the current one, not the last: its right neighbour takes over
        QCOMPARE(conversations(), (QList<qint64>{b_, d_}));
        QCOMPARE(tabs_->currentIndex(), 1);
        QCOMPARE(currentConversation(), d_);

        tabs_->closeTab(1);  // the current one and the last: the one before it takes over
        QCOMPARE(conversations(), (QList<qint64>{b_}));
        QCOMPARE(tabs_->currentIndex(), 0);
        QCOMPARE(currentConversation(), b_);

        current.clear();
        tabs_->closeTab(0);  // the only one
        QCOMPARE(tabs_->rowCount(), 0);
        QCOMPARE(tabs_->currentIndex(), -1);
        QVERIFY(!tabs_->current());
        QVERIFY(current.size() >= 1);
        QTRY_VERIFY_WITH_TIMEOUT(savedTabs().empty(), kWaitMs);
    }

    void navigationWraps() {
        start();
        QVERIFY(openAll());
        QCOMPARE(tabs_->currentIndex(), 3);
        tabs_->nextTab();
        QCOMPARE(tabs_->currentIndex(), 0);
        tabs_->nextTab();
        QCOMPARE(tabs_->currentIndex(), 1);
        tabs_->previousTab();
        tabs_->previousTab();
        QCOMPARE(tabs_->currentIndex(), 3);
        QCOMPARE(currentConversation(), d_);
        tabs_->setCurrentIndex(42);  // clamped
        QCOMPARE(tabs_->currentIndex(), 3);
        tabs_->setCurrentIndex(-5);
        QCOMPARE(tabs_->currentIndex(), 0);
        for (int i = 0; i < 3; ++i) tabs_->closeTab(1);
        tabs_->nextTab();  // one tab: stays
        QCOMPARE(tabs_->currentIndex(), 0);
        tabs_->previousTab();
        QCOMPARE(tabs_->currentIndex(), 0);
    }

    void tabsAreSavedAndRestored() {
        start();
        QVERIFY(openAll());
        ChatSession* alpha = tabs_->sessionAt(0);
        QTRY_COMPARE_WITH_TIMEOUT(alpha->messages()->leafId(), qint64(r2_), kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(tabs_->sessionAt(1)->messages()->leafId(), qint64(bMsg_), kWaitMs);
        alpha->messages()->previousBranch(1);  // Alpha shows its first reply
        QTRY_COMPARE_WITH_TIMEOUT(alpha->messages()->leafId(), qint64(r1_), kWaitMs);
        tabs_->closeTab(2);  // Gamma
        tabs_->setCurrentIndex(1);  // Beta
        const std::vector<OpenTab> expected{{a_, r1_, false}, {b_, bMsg_, true}, {d_, std::nullopt, false}};
        QTRY_VERIFY_WITH_TIMEOUT(savedTabs() == expected, kWaitMs);
        stop();

        start();
        QSignalSpy restored(tabs_.get(), &TabListModel::restored);
        tabs_->restore();
        QVERIFY(restored.wait(kWaitMs));
        QCOMPARE(conversations(), (QList<qint64>{a_, b_, d_}));
        QCOMPARE(tabs_->currentIndex(), 1);
        QCOMPARE(currentConversation(), b_);
        QTRY_COMPARE_WITH_TIMEOUT(title(0), QString("Alpha"), kWaitMs);
        QTRY_COMPARE_WITH_TIMEOUT(title(2), QString("Delta"), kWaitMs);
        // Each tab is back on the branch it showed.
        QTRY_COMPARE_WITH_TIMEOUT(tabs_->sessionAt(0)->messages()->leafId(), qint64(r1_), kWaitMs);
        const auto* alphaRows = tabs_->sessionAt(0)->messages();
        QCOMPARE(alphaRows->rowCount(), 2);
        QCOMPARE(alphaRows->row(1).text, QString("Hello"));
        QCOMPARE(alphaRows->row(1).branchIndex, 0);
        QCOMPARE(alphaRows->row(1).branchCount, 2);
        QTRY_COMPARE_WITH_TIMEOUT(tabs_->sessionAt(1)->messages()->leafId(), qint64(bMsg_), kWaitMs);
        QTest::qWait(50);  // a reload of the restored tabs must not change what is saved
        QTRY_VERIFY_WITH_TIMEOUT(savedTabs() == expected, kWaitMs);
    }

    void restoreWithNothingSaved() {
        start();
        QSignalSpy restored(tabs_.get(), &TabListModel::restored);
        tabs_->restore();
        QVERIFY(restored.wait(kWaitMs));
        QCOMPARE(tabs_->rowCount(), 0);
        QCOMPARE(tabs_->currentIndex(), -1);
    }

    void deletedConversationLosesItsTab() {
        start();
        QVERIFY(openAll());
        tabs_->setCurrentIndex(2);  // Gamma
        bool deleted = false;
        service_->call(this, [id = b_](arbor::Store& s) { s.delete_conversation(id); }, [&] { deleted = true; });
        QTRY_VERIFY_WITH_TIMEOUT(deleted, kWaitMs);
        tabs_->closeConversation(b_);
        QCOMPARE(conversations(), (QList<qint64>{a_, c_, d_}));
        QCOMPARE(currentConversation(), c_);
        tabs_->closeConversation(b_);  // no longer open: nothing happens
        tabs_->closeConversation(987654);
        QCOMPARE(tabs_->rowCount(), 3);
        const std::vector<OpenTab> expected{{a_, r2_, false}, {c_, std::nullopt, true}, {d_, std::nullopt, false}};
        QTRY_VERIFY_WITH_TIMEOUT(savedTabs() == expected, kWaitMs);
    }

    void renameReachesTheTab() {
        start();
        QVERIFY(openAll());
        QSignalSpy changed(tabs_.get(), &QAbstractItemModel::dataChanged);
        tabs_->renamed(c_, "Gamma rays");
        QCOMPARE(title(2), QString("Gamma rays"));
        QCOMPARE(tabs_->data(tabs_->index(2), Qt::DisplayRole).toString(), QString("Gamma rays"));
        QCOMPARE(changed.size(), 1);
        QCOMPARE(changed.at(0).at(0).toModelIndex().row(), 2);
        tabs_->renamed(987654, "nobody");
        QCOMPARE(changed.size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestTabListModel)
#include "test_tab_list_model.moc"
