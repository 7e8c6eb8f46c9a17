// Feedback while a reply is made, in the real window (offscreen) with the default model:
// a long prompt shows "Reading prompt: N of M tokens" as the engine computes it in
// chunks; the status bar names the model and its device and shows how much of the
// context the conversation takes (also after a restart); a reply stopped at max tokens
// offers Continue, which grows the same message from the cache.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QRegularExpression>
#include <QtTest>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::startWithModel;
using arbor::test::visibleItems;

namespace {

// The status bar's count: 950 -> "950", 3140 -> "3.1k", 8192 -> "8.2k".
QString tokenCount(int n) {
    if (n < 1000) return QString::number(n);
    QString k = QString::number(n / 1000.0, 'f', 1);
    if (k.endsWith(QStringLiteral(".0"))) k.chop(2);
    return k + QLatin1Char('k');
}

QString textOf(QQuickWindow* window, const char* name) {
    QQuickItem* item = findItem(window, QString::fromLatin1(name));
    return item ? item->property("text").toString() : QString();
}

} // namespace

class TestReplyProgress : public QObject {
    Q_OBJECT
private slots:
    void progressStatusAndContinue();
};

void TestReplyProgress::progressStatusAndContinue() {
    ARBOR_REQUIRE_MODEL();
    arbor::test::TemporaryDatabase db;
    qint64 reply = 0;
    int contextAfter = 0;
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        QQuickWindow* window = running.window;
        ArborApp& app = running.app;
        QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
        QTRY_VERIFY(app.tabs()->current());
        ChatSession* session = app.tabs()->current();
        // Greedy: a sampled reply may end its turn before the eight tokens this test needs.
        QVERIFY(session->saveSettings({{"maxTokens", 8}, {"temperature", 0}}).isEmpty());

        // The status bar: the model and what runs it.
        const QString status = textOf(window, "statusModel");
        QVERIFY2(status.contains(app.model()->name()) && !app.model()->device().isEmpty() &&
                     status.contains(app.model()->device()),
                 qPrintable(status));

        // A prompt of more than one chunk (the engine computes 512 rows a step), pasted.
        QString text;
        for (int i = 0; i < 70; ++i) text += QStringLiteral("The quick brown fox jumps over the lazy dog near the bank. ");
        text += QStringLiteral("\nWhat did the fox do?");
        QQuickItem* input = findItem(window, QStringLiteral("composerInput"));
        QVERIFY(input);
        input->setProperty("text", text);
        QTRY_VERIFY(input->hasActiveFocus());
        QTest::keyClick(window, Qt::Key_Return);

        // "Reading prompt: N of M tokens" with some but not all of it done.
        static const QRegularExpression reading(QStringLiteral("^Reading prompt: (\\d+) of (\\d+) tokens$"));
        QString seen;
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                for (QQuickItem* label : visibleItems(window, QStringLiteral("statsLabel"))) {
                    const auto m = reading.match(label->property("text").toString());
                    if (m.hasMatch() && m.captured(1).toInt() > 0 && m.captured(1).toInt() < m.captured(2).toInt()) {
                        seen = m.captured(0);
                        return true;
                    }
                }
                return false;
            }(),
            180000);
        QCOMPARE(seen, QStringLiteral("Reading prompt: %1 of %2 tokens")
                           .arg(session->prefillDone()).arg(session->prefillTotal()));
        QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-reading-prompt.png")));
        QTRY_VERIFY_WITH_TIMEOUT(!session->generating(), 180000);
        QCOMPARE(session->prefillTotal(), 0);

        // Stopped at max tokens: the stats say so, the context use counts prompt and reply.
        reply = session->messages()->row(1).id;
        arbor::Message before;
        QTRY_VERIFY((before = arbor::Store(db.path()).message(reply)).state == arbor::MessageState::complete);
        QCOMPARE(before.stats.finish_reason, std::string("length"));
        QCOMPARE(int(before.token_ids.size()), 8);
        const int prompt = before.stats.prompt_tokens.value_or(0);
        QVERIFY(prompt > 512);
        QCOMPARE(session->contextTokens(), prompt + 8);
        QCOMPARE(textOf(window, "statusContext"),
                 QStringLiteral("%1 / %2 tokens").arg(tokenCount(prompt + 8), tokenCount(app.model()->contextSize())));
        QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-status-bar.png")));

        // Continue: the same message grows, its prompt and first ids from the cache.
        QQuickItem* more = nullptr;
        QTRY_VERIFY((more = visibleItems(window, QStringLiteral("continueButton")).value(0)) != nullptr);
        ReplyStats stats;  // of the continuing request (not of the warm-up that follows it)
        QMetaObject::Connection started = connect(session, &ChatSession::requestStarted, this, [&](Reply* request) {
            connect(request, &Reply::finished, this, [&](const ReplyStats& s) { stats = s; });
        });
        click(window, more);
        QTRY_VERIFY(session->generating());
        QTRY_VERIFY_WITH_TIMEOUT(!session->generating(), 180000);
        QCOMPARE(session->messages()->rowCount(), 2);
        QCOMPARE(session->messages()->row(1).id, reply);
        arbor::Message after;
        QTRY_VERIFY((after = arbor::Store(db.path()).message(reply)).state == arbor::MessageState::complete);
        QVERIFY2(after.text.size() > before.text.size() && after.text.starts_with(before.text), after.text.c_str());
        // Eight more tokens, or fewer when the continuation ends the turn (sampled text).
        const int grown = int(after.token_ids.size());
        QVERIFY2(grown > 8 && grown <= 16, qPrintable(QString::number(grown)));
        if (after.stats.finish_reason == "length") QCOMPARE(grown, 16);
        QVERIFY(std::equal(before.token_ids.begin(), before.token_ids.end(), after.token_ids.begin()));
        // Stored per turn: the same prompt; the engine read the prompt and the first 8 ids,
        // all but at most a page of them from the cache.
        QCOMPARE(after.stats.prompt_tokens, std::optional<int>(prompt));
        disconnect(started);
        QCOMPARE(stats.promptTokens, prompt + 8);
        QVERIFY2(stats.cachedTokens >= prompt + 8 - 16, qPrintable(QString::number(stats.cachedTokens)));
        QCOMPARE(arbor::Store(db.path()).children(session->messages()->row(0).id).size(), std::size_t(1));
        contextAfter = prompt + grown;
        QCOMPARE(session->contextTokens(), contextAfter);
    }
    // Restarted, the restored tab shows the same context use.
    arbor::test::AppWindow running(db.path());
    startWithModel(running);
    if (QTest::currentTestFailed()) return;
    QTRY_VERIFY(running.app.tabs()->current());
    QTRY_COMPARE(running.app.tabs()->current()->contextTokens(), contextAfter);
    QTRY_COMPARE(textOf(running.window, "statusContext"),
                 QStringLiteral("%1 / %2 tokens").arg(tokenCount(contextAfter), tokenCount(running.app.model()->contextSize())));
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestReplyProgress>(argc, argv); }

#include "test_reply_progress.moc"
