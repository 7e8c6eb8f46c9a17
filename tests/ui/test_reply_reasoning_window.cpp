// A reply that reasons before it answers, in the real window (no model needed): a stored
// reply with <think> reasoning and a harmony (gpt-oss) one. The bubble shows the answer as
// markdown without any markup, and the reasoning collapsed under "Thought for N words",
// which a click expands; Copy copies the answer only. The stored text is left as it was.
// Screenshots, light and dark: build/arbor-reasoning-<kind>-<theme>.png.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QClipboard>
#include <QGuiApplication>
#include <QtTest>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::visibleItems;

namespace {

void saveScreenshot(QQuickWindow* window, const QString& name) {
    QTest::qWait(150);  // let the last frame render
    const QImage shot = window->grabWindow();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-reasoning-%1.png").arg(name)));
}

// Starts the app over `db` with no model: the stored conversation's tab needs none.
void startWithoutModel(arbor::test::AppWindow& running, const arbor::test::TemporaryDatabase& db) {
    running.app.start(QString::fromStdString((db.path().parent_path() / "no-model.gguf").string()));
    QVERIFY(QTest::qWaitForWindowExposed(running.window));
    QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
}

// The text of every markdown block shown.
QString shownAnswer(QQuickWindow* window) {
    QStringList texts;
    for (QQuickItem* item : visibleItems(window, QStringLiteral("markdownText")))
        texts << item->property("text").toString().trimmed();  // a markdown TextEdit ends its text with "\n\n"
    return texts.join(u'\n');
}

} // namespace

class TestReplyReasoningWindow : public QObject {
    Q_OBJECT
private slots:
    void reasoningIsCollapsedAboveTheAnswer_data() {
        QTest::addColumn<QString>("reply");
        QTest::addColumn<QString>("reasoning");
        QTest::addColumn<QString>("answer");
        QTest::addColumn<int>("words");
        QTest::newRow("think") << QStringLiteral(
            "<think>\nThe user wants the capital of Norway. That is Oslo, on the Oslofjord.\n</think>\n\n"
            "The capital of Norway is **Oslo**.")
                               << QStringLiteral("The user wants the capital of Norway. That is Oslo, on the Oslofjord.")
                               << QStringLiteral("The capital of Norway is **Oslo**.") << 13;
        QTest::newRow("harmony") << QStringLiteral(
            "<|channel|>analysis<|message|>Capital of Norway: Oslo. Answer briefly.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>The capital of Norway is **Oslo**.")
                                 << QStringLiteral("Capital of Norway: Oslo. Answer briefly.")
                                 << QStringLiteral("The capital of Norway is **Oslo**.") << 6;
    }

    void reasoningIsCollapsedAboveTheAnswer() {
        QFETCH(QString, reply);
        QFETCH(QString, reasoning);
        QFETCH(QString, answer);
        QFETCH(int, words);
        const arbor::test::TemporaryDatabase db;
        arbor::MessageId replyId = 0;
        {
            arbor::Store store(db.path());
            const auto conversation = store.create_conversation("Capital");
            const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User,
                                                    "What is the capital of Norway?", {});
            replyId = store.add_message(conversation, question, arbor::Role::Assistant, reply.toStdString(), {});
            const arbor::OpenTab tab{conversation, replyId, true};
            store.save_open_tabs({&tab, 1});
        }
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        running.window->resize(900, 700);
        startWithoutModel(running, db);
        if (QTest::currentTestFailed()) return;
        QTRY_COMPARE(visibleItems(running.window, QStringLiteral("reasoningToggle")).size(), 1);
        QQuickItem* toggle = visibleItems(running.window, QStringLiteral("reasoningToggle")).front();
        const QString tag = QString::fromLatin1(QTest::currentDataTag());

        // Collapsed: the answer alone, no markup.
        QCOMPARE(toggle->property("text").toString(), QStringLiteral("Thought for %1 words").arg(words));
        QVERIFY(visibleItems(running.window, QStringLiteral("reasoningText")).isEmpty());
        QTRY_VERIFY(!shownAnswer(running.window).isEmpty());
        const QString shown = shownAnswer(running.window);
        QVERIFY2(shown.contains(QStringLiteral("The capital of Norway is")), qPrintable(shown));
        QVERIFY2(!shown.contains(u'<') && !shown.contains(QStringLiteral("Oslofjord"))
                     && !shown.contains(QStringLiteral("briefly")),
                 qPrintable(shown));
        running.app.settings()->setTheme(QStringLiteral("light"));
        saveScreenshot(running.window, tag + QStringLiteral("-collapsed-light"));

        // A click shows the reasoning, markup removed; another hides it again.
        click(running.window, toggle);
        QTRY_COMPARE(visibleItems(running.window, QStringLiteral("reasoningText")).size(), 1);
        QQuickItem* text = visibleItems(running.window, QStringLiteral("reasoningText")).front();
        QCOMPARE(text->property("text").toString(), reasoning);
        QVERIFY(text->height() > 0);
        saveScreenshot(running.window, tag + QStringLiteral("-light"));
        running.app.settings()->setTheme(QStringLiteral("dark"));
        saveScreenshot(running.window, tag + QStringLiteral("-dark"));
        click(running.window, toggle);
        QTRY_VERIFY(visibleItems(running.window, QStringLiteral("reasoningText")).isEmpty());

        // Copy: the answer's markdown, without the reasoning.
        QGuiApplication::clipboard()->clear();
        const QList<QQuickItem*> copies = visibleItems(running.window, QStringLiteral("copyMessageButton"));
        QCOMPARE(copies.size(), 2);  // the question's, the reply's
        click(running.window, copies.back());
        QTRY_COMPARE(QGuiApplication::clipboard()->text(), answer);

        // The store still has the reply as generated.
        arbor::Store store(db.path());
        QCOMPARE(QString::fromStdString(store.message(replyId).text), reply);
    }

    // While a reply streams its reasoning, the toggle says "Thinking…" and the answer's
    // view shows nothing of it; the answer's pieces then show as they come. The reply is
    // streamed into the conversation's message model as the chat session streams one.
    void aStreamingReplyThinksFirst() {
        const arbor::test::TemporaryDatabase db;
        arbor::MessageId replyId = 0;
        {
            arbor::Store store(db.path());
            const auto conversation = store.create_conversation("Sum");
            const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User, "2 + 2?", {});
            replyId = store.add_message(conversation, question, arbor::Role::Assistant, "", {});
            const arbor::OpenTab tab{conversation, replyId, true};
            store.save_open_tabs({&tab, 1});
        }
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        startWithoutModel(running, db);
        if (QTest::currentTestFailed()) return;
        QTRY_VERIFY(running.app.tabs()->current() != nullptr);
        MessageListModel* messages = running.app.tabs()->current()->messages();
        QTRY_COMPARE(messages->rowCount(), 2);
        QVERIFY(visibleItems(running.window, QStringLiteral("reasoningToggle")).isEmpty());

        messages->startLive(replyId);
        const auto toggleText = [&] {
            const QList<QQuickItem*> toggles = visibleItems(running.window, QStringLiteral("reasoningToggle"));
            return toggles.size() == 1 ? toggles.front()->property("text").toString() : QString();
        };
        const QStringList pieces = {"<", "think", ">", "Two ", "and two ", "make four.", "</", "think", ">"};
        for (qsizetype i = 0; i < pieces.size(); ++i) {
            messages->appendText(replyId, pieces[i]);
            QTest::qWait(20);
            QVERIFY2(shownAnswer(running.window).isEmpty(), qPrintable(shownAnswer(running.window)));
            // Thinking from the complete opening tag until the complete closing one.
            if (i >= 2 && i + 1 < pieces.size()) QCOMPARE(toggleText(), QStringLiteral("Thinking…"));
            if (i < 2) QVERIFY(toggleText().isEmpty());
        }
        QCOMPARE(toggleText(), QStringLiteral("Thought for 5 words"));
        messages->appendText(replyId, QStringLiteral("\n\nIt is "));
        QTRY_VERIFY2(shownAnswer(running.window).startsWith(QStringLiteral("It is")), qPrintable(shownAnswer(running.window)));
        messages->appendText(replyId, QStringLiteral("**4**."));
        QTRY_COMPARE(shownAnswer(running.window), QStringLiteral("It is **4**."));
        messages->setFinished(replyId, arbor::MessageState::complete, {});
        QCOMPARE(toggleText(), QStringLiteral("Thought for 5 words"));
    }
};

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestReplyReasoningWindow>(argc, argv); }
#include "test_reply_reasoning_window.moc"
