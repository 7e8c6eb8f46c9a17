// The real desktop app on the offscreen platform with the default model: two tabs send
// a message each through the composer, both replies stream at the same time through the
// one engine, both are stored, the window is saved as a PNG in the build directory, and
// a restarted app brings both tabs back.
#include "fake_hub.h"
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/paths.h"
#include "arbor/store.h"

#include <cmath>

#include <QAccessible>
#include <QDir>
#include <QFileInfo>
#include <QGuiApplication>
#include <QProcess>
#include <QStandardPaths>
#include <QQuickItem>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace arbor::app;
using arbor::test::FreshApp;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::startWithModel;
using arbor::test::typeAndSend;
using arbor::test::visibleItems;

namespace {

// Every visible control of the window has an accessible name (its text or an explicit
// Accessible.name); returns the class names of those that do not.
QStringList controlsWithoutName(QQuickItem* item) {
    QStringList missing;
    if (item->isVisible()) {
        static const char* const kControls[] = {"QQuickAbstractButton", "QQuickTextField", "QQuickTextArea",
                                                "QQuickSpinBox", "QQuickComboBox", "QQuickTabBar"};
        for (const char* kind : kControls) {
            if (!item->inherits(kind)) continue;
            QAccessibleInterface* a = QAccessible::queryAccessibleInterface(item);
            if (!a || a->text(QAccessible::Name).trimmed().isEmpty())
                missing << QString::fromLatin1(item->metaObject()->className());
        }
        for (QQuickItem* child : item->childItems()) missing << controlsWithoutName(child);
    }
    return missing;
}

// The message at the top of a ListView and how far (pixels) the view is scrolled into it.
std::pair<int, double> scrollPosition(QQuickItem* list) {
    const double y = list->property("contentY").toDouble();
    int index = -1;
    QMetaObject::invokeMethod(list, "indexAt", Q_RETURN_ARG(int, index), Q_ARG(qreal, 1.0), Q_ARG(qreal, y + 1.0));
    QQuickItem* item = nullptr;
    if (index >= 0) QMetaObject::invokeMethod(list, "itemAtIndex", Q_RETURN_ARG(QQuickItem*, item), Q_ARG(int, index));
    return {index, item ? y - item->y() : 0.0};
}

// Ctrl+Shift+Tab as the user presses it: through the X server (xdotool) when the window
// is on X11, whose key mapper turns it into more than one key sequence (QTest's events
// skip that mapping); else as Backtab with Ctrl+Shift, as X11 reports it.
void pressCtrlShiftTab(QQuickWindow* window) {
    if (QGuiApplication::platformName() == QLatin1String("xcb")) {
        QProcess::execute(QStandardPaths::findExecutable(QStringLiteral("xdotool")),
                          {QStringLiteral("windowfocus"), QStringLiteral("--sync"), QString::number(window->winId()),
                           QStringLiteral("key"), QStringLiteral("ctrl+shift+Tab")});
        return;
    }
    QTest::keyClick(window, Qt::Key_Backtab, Qt::ControlModifier | Qt::ShiftModifier);
}

} // namespace

class TestAppEndToEnd : public QObject {
    Q_OBJECT
private slots:
    void twoTabsGenerateAtOnce();
    void keyboardShortcuts();
    void sidebarDeleteCanBeUndone();
    void eachTabKeepsItsDraftAndScrollPosition();
    void modelThatFailsLeavesOldConversationsReadable();
    void missingDefaultModelIsFetchedFromTheWindow();
    void corruptDatabaseIsMovedAsideAndReported();
    void startThatNeverFinishedOpensNoTabs();
};

void TestAppEndToEnd::keyboardShortcuts() {
    ARBOR_REQUIRE_MODEL();
    if (QGuiApplication::platformName() == QLatin1String("xcb") &&
        QStandardPaths::findExecutable(QStringLiteral("xdotool")).isEmpty())
        QSKIP("on X11 the keys are pressed through the X server with xdotool, which is not installed");
    FreshApp fresh;
    startWithModel(fresh);
    if (QTest::currentTestFailed()) return;
    ArborApp& app = fresh.app;
    QQuickWindow* window = fresh.window;
    TabListModel* tabs = app.tabs();

    for (int n = 1; n <= 3; ++n) {  // Ctrl+N
        QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
        QTRY_COMPARE(tabs->rowCount(), n);
        QTRY_COMPARE(tabs->currentIndex(), n - 1);
    }
    QTest::keyClick(window, Qt::Key_Tab, Qt::ControlModifier);  // Ctrl+Tab wraps to the first
    QCOMPARE(tabs->currentIndex(), 0);
    // Ctrl+Shift+Tab as the platforms report it: Backtab with Ctrl+Shift (X11), Backtab
    // with Ctrl (Wayland), Tab with Ctrl+Shift.
    pressCtrlShiftTab(window);
    QTRY_COMPARE(tabs->currentIndex(), 2);
    QTest::keyClick(window, Qt::Key_Backtab, Qt::ControlModifier);
    QCOMPARE(tabs->currentIndex(), 1);
    QTest::keyClick(window, Qt::Key_Tab, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(tabs->currentIndex(), 0);
    QTest::keyClick(window, Qt::Key_Backtab, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(tabs->currentIndex(), 2);

    // Ctrl+F: the sidebar's search; F2: rename the current conversation.
    QQuickItem* search = findItem(window, QStringLiteral("searchField"));
    QVERIFY(search && !search->hasActiveFocus());
    QTest::keyClick(window, Qt::Key_F, Qt::ControlModifier);
    QTRY_VERIFY(search->hasActiveFocus());
    QQuickItem* sidebar = findItem(window, QStringLiteral("sidebar"));
    QObject* rename = sidebar->property("renameDialog").value<QObject*>();
    QVERIFY(rename && !rename->property("opened").toBool());
    QTest::keyClick(window, Qt::Key_F2);
    QTRY_VERIFY(rename->property("opened").toBool());
    QCOMPARE(rename->property("titleText").toString(), tabs->current()->title());
    QTest::keyClick(window, Qt::Key_Escape);
    QTRY_VERIFY(!rename->property("visible").toBool());  // closed, its exit transition done
    click(window, findItem(window, QStringLiteral("composerInput")));

    // Esc stops the reply being generated; it is kept as stopped.
    ChatSession* session = tabs->current();
    typeAndSend(window, QStringLiteral("Write a long story about the sea."));
    QTRY_VERIFY(session->generating());
    QTRY_VERIFY(session->messages()->rowCount() == 2 && !session->messages()->row(1).text.isEmpty());
    QTest::keyClick(window, Qt::Key_Escape);
    QTRY_VERIFY(!session->generating());
    QCOMPARE(session->messages()->row(1).state, arbor::MessageState::stopped);

    QTest::keyClick(window, Qt::Key_W, Qt::ControlModifier);  // Ctrl+W
    QTRY_COMPARE(tabs->rowCount(), 2);
    QCOMPARE(tabs->currentIndex(), 1);

    // A tab's × closes it (the conversation stays in the list).
    const int listed = app.conversations()->rowCount();
    const QList<QQuickItem*> closers = visibleItems(window, QStringLiteral("closeTabButton"));
    QCOMPARE(closers.size(), 2);
    click(window, closers.front());
    QTRY_COMPARE(tabs->rowCount(), 1);
    QCOMPARE(app.conversations()->rowCount(), listed);

    // Ctrl+Q closes the window (which quits the app).
    QVERIFY(window->isVisible());
    QTest::keyClick(window, Qt::Key_Q, Qt::ControlModifier);
    QTRY_VERIFY(!window->isVisible());
}

// The sidebar's trash button takes a conversation away at once with a "Deleted … Undo"
// bar; Undo brings it back; otherwise it is deleted when the bar times out, or when the
// app closes first.
void TestAppEndToEnd::sidebarDeleteCanBeUndone() {
    ARBOR_REQUIRE_MODEL();
    arbor::test::TemporaryDatabase db;
    auto stored = [&] { return int(arbor::Store(db.path()).list_conversations().size()); };
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        ArborApp& app = running.app;
        QQuickWindow* window = running.window;
        for (int n = 1; n <= 3; ++n) {
            QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
            QTRY_COMPARE(app.conversations()->rowCount(), n);
        }
        app.renameConversation(app.tabs()->current()->conversationId(), QStringLiteral("Shopping list"));
        QTRY_COMPARE(app.conversations()->data(app.conversations()->index(0), ConversationListModel::TitleRole).toString(),
                     QStringLiteral("Shopping list"));
        auto trashOf = [&](const QString& title) -> QQuickItem* {
            for (QQuickItem* b : visibleItems(window, QStringLiteral("deleteConversationButton")))
                if (QAccessible::queryAccessibleInterface(b)->text(QAccessible::Name) == QStringLiteral("Delete ") + title)
                    return b;
            return nullptr;
        };
        QQuickItem* undoBar = findItem(window, QStringLiteral("undoBar"));
        QVERIFY(undoBar && !undoBar->isVisible());

        QVERIFY(trashOf(QStringLiteral("Shopping list")));
        click(window, trashOf(QStringLiteral("Shopping list")));
        QTRY_COMPARE(app.conversations()->rowCount(), 2);
        QCOMPARE(app.tabs()->rowCount(), 2);  // its tab closed
        QTRY_VERIFY(undoBar->isVisible());
        QCOMPARE(findItem(window, QStringLiteral("undoText"))->property("text").toString(),
                 QStringLiteral("Deleted “Shopping list”"));
        QTest::qWait(100);
        QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-undo-delete.png")));
        QCOMPARE(stored(), 3);  // nothing deleted yet
        click(window, findItem(window, QStringLiteral("undoButton")));
        QTRY_VERIFY(!undoBar->isVisible());
        QTRY_COMPARE(app.conversations()->rowCount(), 3);

        // Not undone: deleted once the bar has timed out.
        QTRY_VERIFY(trashOf(QStringLiteral("Shopping list")));
        click(window, trashOf(QStringLiteral("Shopping list")));
        QTRY_VERIFY(undoBar->isVisible());
        QTest::qWait(ArborApp::kUndoDeleteMs / 2);
        QCOMPARE(stored(), 3);
        QTRY_VERIFY_WITH_TIMEOUT(!undoBar->isVisible(), ArborApp::kUndoDeleteMs);
        QTRY_COMPARE(stored(), 2);
        QCOMPARE(app.conversations()->rowCount(), 2);

        // The next one is still pending when the app closes.
        click(window, visibleItems(window, QStringLiteral("deleteConversationButton")).front());
        QTRY_VERIFY(undoBar->isVisible());
        QCOMPARE(stored(), 2);
    }
    QCOMPARE(stored(), 1);
}

// One composer and one message list serve all tabs: switching tabs must not carry a
// draft into another conversation, and must bring back where the user had scrolled to.
void TestAppEndToEnd::eachTabKeepsItsDraftAndScrollPosition() {
    ARBOR_REQUIRE_MODEL();
    FreshApp fresh;
    startWithModel(fresh, QSize(640, 420));  // small, so that one reply is taller than the message list
    if (QTest::currentTestFailed()) return;
    ArborApp& app = fresh.app;
    QQuickWindow* window = fresh.window;
    TabListModel* tabs = app.tabs();
    QQuickItem* input = findItem(window, QStringLiteral("composerInput"));
    QQuickItem* list = findItem(window, QStringLiteral("messageList"));
    QVERIFY(input && list);

    QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
    QTRY_COMPARE(tabs->rowCount(), 1);
    ChatSession* first = tabs->current();
    // The reply is sampled and may be short: ask for more until the list is tall enough.
    const auto tallEnough = [&] { return list->property("contentHeight").toDouble() > 2 * list->height(); };
    for (const char* ask : {"Write a long story about the sea.", "Go on with the story.", "Tell another long story."}) {
        typeAndSend(window, QString::fromLatin1(ask));
        QTRY_VERIFY(first->generating());
        QTRY_VERIFY_WITH_TIMEOUT(!first->generating(), 180000);
        QTest::qWait(200);  // the list lays out the finished reply
        if (tallEnough()) break;
    }
    QTRY_VERIFY(tallEnough());
    const int rows = first->messages()->rowCount();

    // The user scrolls up into the reply (as a drag would leave it) and starts a draft.
    const double top = list->property("originY").toDouble();
    const double scrolled = std::round(top + (list->property("contentHeight").toDouble() - list->height()) / 2);
    list->setProperty("followEnd", false);
    list->setProperty("contentY", scrolled);
    QCOMPARE(list->property("contentY").toDouble(), scrolled);
    const auto [topMessage, intoIt] = scrollPosition(list);
    QVERIFY(topMessage >= 0);
    for (const QChar c : QStringLiteral("unsent one")) QTest::keyClick(window, c.toLatin1());

    QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);  // a second tab: empty composer
    QTRY_COMPARE(tabs->currentIndex(), 1);
    QCOMPARE(input->property("text").toString(), QString());
    QTRY_VERIFY(input->hasActiveFocus());
    for (const QChar c : QStringLiteral("unsent two")) QTest::keyClick(window, c.toLatin1());

    QTest::keyClick(window, Qt::Key_Tab, Qt::ControlModifier);  // back to the first
    QCOMPARE(tabs->currentIndex(), 0);
    QCOMPARE(input->property("text").toString(), QStringLiteral("unsent one"));
    QCOMPARE(list->property("followEnd").toBool(), false);
    // The position is restored once the list has laid the tab's messages out again: wait
    // for it (under load that layout can take more than one frame).
    auto restored = [&] {
        const auto [topNow, intoNow] = scrollPosition(list);
        return topNow == topMessage && std::abs(intoNow - intoIt) < 2.0;
    };
    auto where = [&] {
        const auto [topNow, intoNow] = scrollPosition(list);
        return QString("%1 pixels into message %2, was %3 into %4").arg(intoNow).arg(topNow).arg(intoIt).arg(topMessage);
    };
    QTRY_VERIFY2_WITH_TIMEOUT(restored(), qPrintable(where()), 5000);

    QTest::keyClick(window, Qt::Key_Tab, Qt::ControlModifier);
    QCOMPARE(tabs->currentIndex(), 1);
    QCOMPARE(input->property("text").toString(), QStringLiteral("unsent two"));
    QCOMPARE(first->messages()->rowCount(), rows);  // nothing was sent on the way
}

void TestAppEndToEnd::modelThatFailsLeavesOldConversationsReadable() {
    QTemporaryDir dir;
    const std::filesystem::path db = std::filesystem::path(dir.path().toStdString()) / "arbor.db";
    qint64 conversation = 0;
    {
        arbor::Store store(db);
        conversation = store.create_conversation("Old notes");
        const auto user = store.add_message(conversation, std::nullopt, arbor::Role::User, "question", {});
        store.add_message(conversation, user, arbor::Role::Assistant, "answer", {});
    }
    const QString badModel = dir.filePath(QStringLiteral("broken.gguf"));
    {
        QFile f(badModel);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("GGUF\x03\x00\x00\x00 this is not a model");
    }
    ArborApp app(db);
    QQmlApplicationEngine engine;
    QQuickWindow* window = loadMainWindow(engine, app);
    QVERIFY(window);
    app.start(badModel);
    QTRY_COMPARE_WITH_TIMEOUT(app.model()->state(), QStringLiteral("failed"), 30000);
    QVERIFY(!app.model()->error().isEmpty());
    QQuickItem* status = findItem(window, QStringLiteral("modelStatusText"));
    QVERIFY(status);
    QTRY_VERIFY(status->property("text").toString().startsWith(QStringLiteral("Could not load")));
    QVERIFY(status->property("text").toString().contains(app.model()->error()));

    // The old conversation can still be read.
    QTRY_COMPARE(app.conversations()->rowCount(), 1);
    app.tabs()->openConversation(conversation);
    QTRY_COMPARE(app.tabs()->rowCount(), 1);
    QTRY_COMPARE(app.tabs()->current()->messages()->rowCount(), 2);
    QCOMPARE(app.tabs()->current()->title(), QStringLiteral("Old notes"));
    QVERIFY(!app.tabs()->current()->send(QStringLiteral("hello")));  // refused, with a reason
    QVERIFY(!app.tabs()->current()->error().isEmpty());
}

// A first start without the default model (a fresh package install): the window offers
// the download and the library; the download comes from the pinned Hub file (a fake Hub
// on loopback serving the real model), shows its progress and can be cancelled; tried
// again, it lands under the models directory and the app loads it.
void TestAppEndToEnd::missingDefaultModelIsFetchedFromTheWindow() {
    ARBOR_REQUIRE_MODEL();
    QFile model(QString::fromStdString(arbor::test::model_path().string()));
    QVERIFY(model.open(QIODevice::ReadOnly));
    const DefaultModelSource pinned = DefaultModelSource::pinned();
    arbor::test::FakeHub hub;
    hub.addFile(pinned.hubRepository, pinned.hubFile, model.readAll());
    if (arbor::test::FakeHub::sha256Of(hub.fileData(pinned.hubRepository, pinned.hubFile)) != pinned.sha256)
        QSKIP("ARBOR_MODEL is not the default model, whose sha256 the download checks");
    hub.throttle(256 << 10, 10);  // about 25 MB/s: slow enough to cancel part-way
    QTemporaryDir data;
    const arbor::test::ScopedEnv noOverride("ARBOR_MODEL", std::nullopt);
    const arbor::test::ScopedEnv dataHome("XDG_DATA_HOME", data.path().toUtf8());
    const arbor::test::ScopedEnv endpoint("HF_ENDPOINT", hub.baseUrl().toString().toUtf8());
    const QString expected = QString::fromStdString(arbor::default_model_path().string());
    QVERIFY(expected.startsWith(data.path()));

    FreshApp fresh;
    QVERIFY(fresh.window);
    fresh.app.start();
    QVERIFY(QTest::qWaitForWindowExposed(fresh.window));
    QTRY_COMPARE_WITH_TIMEOUT(fresh.app.model()->state(), QString("failed"), 30000);
    QVERIFY(fresh.app.model()->missingDefaultModel());
    QQuickItem* button = findItem(fresh.window, QStringLiteral("downloadModelButton"));
    QQuickItem* browse = findItem(fresh.window, QStringLiteral("browseModelsButton"));
    QQuickItem* cancel = findItem(fresh.window, QStringLiteral("cancelModelDownloadButton"));
    QQuickItem* statusText = findItem(fresh.window, QStringLiteral("modelStatusText"));
    QVERIFY(button && browse && cancel && statusText);
    QTRY_VERIFY(button->isVisible());
    QVERIFY(browse->isVisible());
    QVERIFY2(statusText->property("text").toString().contains("not installed"), qPrintable(statusText->property("text").toString()));

    DefaultModelDownload* download = fresh.app.defaultModelDownload();
    arbor::test::click(fresh.window, button);
    // Where it stands when nothing came: the stage, the error and what the fake Hub was asked.
    const auto standing = [&] {
        QStringList asked;
        for (const auto& r : hub.requests()) asked << QString::fromUtf8(r.method + ' ' + r.path);
        return QString("stage %1, running %2, error '%3', status '%4', Hub requests: %5")
            .arg(int(download->stage()))
            .arg(download->running())
            .arg(download->error(), statusText->property("text").toString(), asked.join(", "));
    };
    QTRY_VERIFY2_WITH_TIMEOUT(download->receivedBytes() > 0, qPrintable(standing()), 30000);
    QTRY_VERIFY(statusText->property("text").toString().contains(" of 98 MB"));
    QVERIFY2(statusText->property("text").toString().contains("Hugging Face"), qPrintable(statusText->property("text").toString()));
    QVERIFY(cancel->isVisible());
    QVERIFY(!button->isVisible());
    arbor::test::click(fresh.window, cancel);
    QTRY_VERIFY(!download->running());
    QVERIFY2(statusText->property("text").toString().contains("cancelled"), qPrintable(statusText->property("text").toString()));
    QVERIFY(!QFileInfo::exists(expected));
    QCOMPARE(button->property("text").toString(), QString("Try again"));

    hub.throttle(0);
    arbor::test::click(fresh.window, button);
    QTRY_VERIFY_WITH_TIMEOUT(fresh.app.model()->ready(), 60000);
    QVERIFY2(download->error().isEmpty(), qPrintable(download->error()));
    QCOMPARE(fresh.app.model()->path(), expected);
    QVERIFY(!button->isVisible());
    QVERIFY(!browse->isVisible());
    QVERIFY(hub.requestsUnder("/pypi/").isEmpty());
}

void TestAppEndToEnd::corruptDatabaseIsMovedAsideAndReported() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("arbor.db"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(8192, 'x'));
    }
    ArborApp app(path.toStdString());
    QQmlApplicationEngine engine;
    QVERIFY(loadMainWindow(engine, app));
    app.start(dir.filePath(QStringLiteral("no-model.gguf")));
    QTRY_VERIFY_WITH_TIMEOUT(app.started(), 30000);
    QVERIFY2(!app.notice().isEmpty(), "the user is not told");
    const QStringList aside = QDir(dir.path()).entryList({QStringLiteral("arbor.db.corrupt-*")});
    QCOMPARE(aside.size(), 1);
    QVERIFY2(app.notice().contains(aside.front()), qPrintable(app.notice()));
    // The new database works.
    app.tabs()->newConversation();
    QTRY_COMPARE(app.conversations()->rowCount(), 1);
}

// A start killed while it restored the tabs (a conversation that froze the window) leaves
// the start-up marker set, as written here. The next start opens no tabs and says why;
// it finishes, so the marker goes, and the start after it is an ordinary one.
void TestAppEndToEnd::startThatNeverFinishedOpensNoTabs() {
    const arbor::test::TemporaryDatabase db;
    auto marker = [&db] { return arbor::Store(db.path()).app_setting(ArborApp::kStartupMarkerKey); };
    qint64 conversation = 0;
    {
        arbor::Store store(db.path());
        conversation = store.create_conversation("The paste that froze it");
        const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User, "question", {});
        const arbor::OpenTab tab{conversation, question, true};
        store.save_open_tabs({&tab, 1});
        store.set_app_setting(ArborApp::kStartupMarkerKey, "1");
    }
    const QString noModel = QString::fromStdString((db.path().parent_path() / "no-model.gguf").string());
    {
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        running.app.start(noModel);
        QVERIFY(QTest::qWaitForWindowExposed(running.window));
        QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
        QCOMPARE(running.app.tabs()->rowCount(), 0);
        QQuickItem* notice = findItem(running.window, QStringLiteral("noticeText"));
        QVERIFY(notice);
        QTRY_VERIFY(notice->isVisible());
        const QString said = notice->property("text").toString();
        QVERIFY2(said.contains(QStringLiteral("did not finish starting")) && said.contains(QStringLiteral("not reopened")),
                 qPrintable(said));
        QTRY_COMPARE(running.app.conversations()->rowCount(), 1);  // still there to open
        QTest::qWait(100);
        QVERIFY(running.window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-start-guard.png")));
        QTRY_VERIFY_WITH_TIMEOUT(!marker(), 5 * ArborApp::kStartupSettleMs);  // this start finished
        running.app.tabs()->openConversation(conversation);
        QTRY_COMPARE(int(arbor::Store(db.path()).open_tabs().size()), 1);
    }
    {
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        running.app.start(noModel);
        QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
        QVERIFY(marker());  // set while the tabs are restored and shown
        QCOMPARE(running.app.tabs()->rowCount(), 1);
        QTRY_COMPARE(running.app.tabs()->current()->messages()->rowCount(), 1);
        QVERIFY2(running.app.notice().isEmpty(), qPrintable(running.app.notice()));
        QTRY_VERIFY_WITH_TIMEOUT(!marker(), 5 * ArborApp::kStartupSettleMs);
    }
}

void TestAppEndToEnd::twoTabsGenerateAtOnce() {
    ARBOR_REQUIRE_MODEL();
    QTemporaryDir dir;
    const std::filesystem::path db = std::filesystem::path(dir.path().toStdString()) / "arbor.db";
    const QString model = QString::fromStdString(arbor::test::model_path().string());
    const QStringList prompts = {QStringLiteral("Write a short story about a lighthouse keeper."),
                                 QStringLiteral("Write a short story about a robot who learns to paint.")};
    // Titles come from the first message, cut to 48 characters with an ellipsis.
    const QStringList titles = {prompts[0], QStringLiteral("Write a short story about a robot who learns to") + QChar(0x2026)};
    QList<qint64> conversations;
    {
        arbor::test::AppWindow running(db);
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        ArborApp& app = running.app;
        QQuickWindow* window = running.window;

        // Count how many tabs generate at the same moment.
        int generating = 0, mostAtOnce = 0;
        auto watch = [&](ChatSession* s) {
            connect(s, &ChatSession::generatingChanged, this, [&, s] {
                generating += s->generating() ? 1 : -1;
                mostAtOnce = std::max(mostAtOnce, generating);
            });
        };

        for (int tab = 0; tab < 2; ++tab) {
            QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
            QTRY_COMPARE(app.tabs()->rowCount(), tab + 1);
            QTRY_COMPARE(app.tabs()->currentIndex(), tab);
            ChatSession* session = app.tabs()->current();
            QVERIFY(session);
            watch(session);
            typeAndSend(window, prompts[tab]);
            QTRY_VERIFY(session->generating());
            conversations.push_back(session->conversationId());
        }
        QCOMPARE(app.tabs()->sessionAt(0)->generating(), true);  // the first tab was not interrupted

        for (int tab = 0; tab < 2; ++tab)
            QTRY_VERIFY_WITH_TIMEOUT(!app.tabs()->sessionAt(tab)->generating(), 180000);
        QCOMPARE(mostAtOnce, 2);
        for (int tab = 0; tab < 2; ++tab) {
            ChatSession* s = app.tabs()->sessionAt(tab);
            QVERIFY2(s->error().isEmpty(), qPrintable(s->error()));
            QCOMPARE(s->messages()->rowCount(), 2);
            QCOMPARE(s->title(), titles[tab]);
        }

        // The second tab is shown: its reply with its stats line.
        QTRY_VERIFY(!visibleItems(window, QStringLiteral("statsLabel")).isEmpty());
        const QString stats = visibleItems(window, QStringLiteral("statsLabel")).front()->property("text").toString();
        QVERIFY2(stats.contains(QStringLiteral("tokens/s")) && stats.contains(QStringLiteral("prompt tokens")),
                 qPrintable(stats));

        const QStringList unnamed = controlsWithoutName(window->contentItem());
        QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed.join(", ")));

        QTest::qWait(200);  // let the last frame render
        const QImage shot = window->grabWindow();
        QVERIFY(!shot.isNull());
        const QString png = QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-end-to-end.png");
        QVERIFY(shot.save(png));
        qInfo("screenshot: %s", qPrintable(png));
        QSet<QRgb> colours;
        for (int y = 0; y < shot.height(); y += 7)
            for (int x = 0; x < shot.width(); x += 7) colours.insert(shot.pixel(x, y));
        QVERIFY2(colours.size() > 10, "the screenshot is blank");
    }

    // Everything is stored: each conversation has its user message and a complete reply
    // with token ids and stats.
    {
        arbor::Store store(db);
        for (int tab = 0; tab < 2; ++tab) {
            const auto leaf = store.latest_leaf(conversations[tab]);
            QVERIFY(leaf);
            const auto path = store.path(*leaf);
            QCOMPARE(int(path.size()), 2);
            QCOMPARE(QString::fromStdString(path[0].text), prompts[tab]);
            QCOMPARE(path[1].role, arbor::Role::Assistant);
            QCOMPARE(path[1].state, arbor::MessageState::complete);
            QVERIFY(!path[1].text.empty());
            QVERIFY(!path[1].token_ids.empty());
            QVERIFY(path[1].stats.prompt_tokens.value_or(0) > 0);
            QVERIFY(path[1].stats.tokens_per_second.value_or(0) > 0);
        }
        const auto tabs = store.open_tabs();
        QCOMPARE(int(tabs.size()), 2);
        QCOMPARE(tabs[0].conversation_id, conversations[0]);
        QCOMPARE(tabs[1].conversation_id, conversations[1]);
        QVERIFY(tabs[1].active);
    }

    // A restarted app shows both tabs again, the second one current.
    {
        ArborApp app(db);
        QQmlApplicationEngine engine;
        QQuickWindow* window = loadMainWindow(engine, app);
        QVERIFY(window);
        app.start(model);
        QTRY_VERIFY_WITH_TIMEOUT(app.started(), 30000);
        QCOMPARE(app.tabs()->rowCount(), 2);
        QCOMPARE(app.tabs()->currentIndex(), 1);
        QTRY_COMPARE(app.tabs()->sessionAt(0)->messages()->rowCount(), 2);
        QTRY_COMPARE(app.conversations()->rowCount(), 2);
    }
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestAppEndToEnd>(argc, argv); }

#include "test_app_end_to_end.moc"
