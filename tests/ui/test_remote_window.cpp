// A remote server through the real window (offscreen): the real arbor-server, started
// here with an API key, is added on the Model settings page (base URL and key), which then
// shows the model it lists; the header's picker lists it as "model @ host", choosing it
// makes it the conversation's (shown in the header, stored in SQLite; the line beside it
// no longer describes the local model), and a message sent
// is answered by the server while the local model stays loaded.
#include "arbor_server_process.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QtTest>

using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

class TestRemoteWindow : public QObject {
    Q_OBJECT
private slots:
    void addsAServerAndChatsWithItsModel();
};

void TestRemoteWindow::addsAServerAndChatsWithItsModel() {
    ARBOR_REQUIRE_MODEL();
    const QString key = QStringLiteral("window-test-key");
    QTemporaryDir kvDir;
    QProcess server;
    const quint16 port = arbor::test::startArborServer(server, key, kvDir.path());
    QVERIFY(port != 0);
    const QString url = QStringLiteral("http://127.0.0.1:%1/v1").arg(port);
    const QString label = QStringLiteral("SmolLM2-135M-Instruct.Q4_1 @ 127.0.0.1:%1").arg(port);

    arbor::test::TemporaryDatabase db;
    qint64 conversation = 0;
    {
        arbor::test::AppWindow running(db.path());
        arbor::test::startWithModel(running, QSize(1100, 760));
        if (QTest::currentTestFailed()) return;
        QQuickWindow* window = running.window;

        // The Model page: base URL and key, Add; the server's model is listed.
        QObject* settings = running.engine.rootObjects().front()->findChild<QObject*>(QStringLiteral("settingsDialog"));
        QVERIFY(settings);
        QMetaObject::invokeMethod(settings, "open");
        QTRY_VERIFY(settings->property("opened").toBool());
        settings->setProperty("currentPage", 0);
        QTRY_COMPARE(visibleItems(window, QStringLiteral("remoteUrlField")).size(), 1);
        arbor::test::replaceText(window, visibleItems(window, QStringLiteral("remoteUrlField")).front(), url);
        arbor::test::replaceText(window, visibleItems(window, QStringLiteral("remoteKeyField")).front(), key);
        click(window, visibleItems(window, QStringLiteral("remoteAddButton")).front());
        // Each change of the list makes its rows anew: the row is looked up each time.
        auto listed = [window] {
            const QList<QQuickItem*> rows = visibleItems(window, QStringLiteral("remoteEndpointModels"));
            return rows.size() == 1 ? rows.front()->property("text").toString() : QString();
        };
        QTRY_COMPARE_WITH_TIMEOUT(listed(), QStringLiteral("SmolLM2-135M-Instruct.Q4_1"), 20000);
        QVERIFY(!findItem(window, QStringLiteral("remoteProblem"))->isVisible());
        QMetaObject::invokeMethod(settings, "close");
        QTRY_VERIFY(!settings->property("visible").toBool());

        // The picker lists it; choosing it makes it the conversation's, shown in the header.
        running.app.tabs()->newConversation();
        QTRY_VERIFY(running.app.tabs()->current());
        arbor::app::ChatSession* session = running.app.tabs()->current();
        conversation = session->conversationId();
        click(window, findItem(window, QStringLiteral("modelPicker")));
        QTRY_COMPARE(visibleItems(window, QStringLiteral("modelPickerRemoteEntry")).size(), 1);
        QQuickItem* entry = visibleItems(window, QStringLiteral("modelPickerRemoteEntry")).front();
        QCOMPARE(entry->property("text").toString(), label);
        click(window, entry);  // once the list has popped up (click() waits for that)
        QTRY_COMPARE(findItem(window, QStringLiteral("modelPickerText"))->property("text").toString(), label);
        QVERIFY(session->remote());
        // Beside it, not the local model's details but what stays loaded here.
        QCOMPARE(findItem(window, QStringLiteral("modelStatusText"))->property("text").toString(),
                 QStringLiteral("On a remote server; %1 stays loaded here").arg(running.app.model()->displayName()));

        // A message is answered by the server; the local model stays loaded.
        click(window, findItem(window, QStringLiteral("composerInput")));
        arbor::test::typeAndSend(window, QStringLiteral("Hello"));
        QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 2, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!session->generating(), 60000);
        const auto& reply = session->messages()->row(1);
        QCOMPARE(reply.state, arbor::MessageState::complete);
        QVERIFY(!reply.text.isEmpty());
        QVERIFY(running.app.model()->ready());
    }
    // Stored: the conversation's model is the remote one, and the reply has no local ids
    // (a local reply keeps its token ids).
    arbor::Store store(db.path());
    const auto c = store.conversation(conversation);
    QVERIFY2(QString::fromStdString(c.model).startsWith("remote:" + url), c.model.c_str());
    const auto leaf = store.latest_leaf(conversation);
    QVERIFY(leaf);
    const auto m = store.message(*leaf);
    QCOMPARE(m.state, arbor::MessageState::complete);
    QVERIFY(m.token_ids.empty());
    QVERIFY(m.stats.prompt_tokens.has_value());
    QVERIFY(arbor::test::stopArborServer(server));
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestRemoteWindow>(argc, argv); }
#include "test_remote_window.moc"
