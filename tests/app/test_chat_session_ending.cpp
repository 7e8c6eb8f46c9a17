// How a chat session's turn ends early (Stop, closing the tab, unloading the model, a full
// context) and what it costs the GUI thread: the real default model, a real database, and
// a second connection reading what the session wrote (chat_session_fixture.h).
#include "chat_session_fixture.h"
#include "reply_stats_text.h"

#include "../model/synthetic_model_files.h"

#include <QElapsedTimer>
#include <QThread>
#include <QTimer>

#include <limits>

#include <time.h>

using arbor::app::ReplyStats;
using arbor::app::ReplyStatsText;

namespace {
// CPU time the calling thread has used, in ms (time spent waiting for a core excluded).
double threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}
} // namespace

class TestChatSessionEnding : public ChatSessionFixture {
    Q_OBJECT

private slots:
    void initTestCase() { initFixture(); }
    void init() { initDatabase(); }
    void cleanup() { closeDatabase(); }

    void stopKeepsWhatWasGenerated() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(replyStreaming(*s));
        s->stop();
        QVERIFY(finished.wait(kWaitMs));
        QVERIFY(!s->generating());
        const auto m = reader()->message(finished.at(0).at(0).toLongLong());
        QCOMPARE(m.state, arbor::MessageState::stopped);
        QCOMPARE(m.stats.finish_reason, std::string("cancelled"));
        QVERIFY(!m.text.empty());
        QVERIFY(!m.token_ids.empty() && m.token_ids.size() < 1000);
        compareRow(*s->messages(), 1, m);
        s->stop();  // idle: nothing happens
        QVERIFY(!s->generating());
    }

    // A template whose generation prompt opens the <think> (DeepSeek-R1 distills'): the model
    // asked plainly never closes it, so a reply stopped mid-way is reasoning alone, in the
    // live row, once finished, and read back by a new session. The stored ids stay the
    // tokens generated (the "<think>" is the prompt's).
    void stoppedReplyUnderAnOpenedThinkStaysReasoning() {
        const auto copy = std::filesystem::path(dir_.path().toStdString()) / "SmolLM2-thinking-template.gguf";
        if (!std::filesystem::exists(copy)) arbor::test::write_default_model_with_template(copy, arbor::test::kThinkingChatTemplate);
        ModelService thinking;
        thinking.load(QString::fromStdString(copy.string()), 2, 64);
        QTRY_COMPARE_WITH_TIMEOUT(thinking.state(), QString("ready"), kWaitMs);
        const auto parts = [](const MessageListModel& m, int row) {
            const QModelIndex at = m.index(row);
            return std::pair(m.data(at, MessageListModel::ReasoningRole).toString(),
                             m.data(at, MessageListModel::AnswerRole).toString());
        };
        qint64 id = 0;
        {
            auto s = session(thinking);
            QVERIFY(s);
            QCOMPARE(s->saveSettings(kLongSettings), QString());
            QSignalSpy finished(s.get(), &ChatSession::replyFinished);
            QVERIFY(s->send(kLongAnswer));
            QVERIFY(QTest::qWaitFor([&] { return parts(*s->messages(), 1).first.size() > 20; }, kWaitMs));
            QVERIFY(s->messages()->data(s->messages()->index(1), MessageListModel::ReasoningOpenRole).toBool());
            QVERIFY(parts(*s->messages(), 1).second.isEmpty());
            s->stop();
            QVERIFY(finished.wait(kWaitMs));
            id = finished.at(0).at(0).toLongLong();
            const auto [reasoning, answer] = parts(*s->messages(), 1);
            QVERIFY(!reasoning.isEmpty());
            QVERIFY2(answer.isEmpty(), qPrintable(answer));
            compareRow(*s->messages(), 1, reader()->message(id));
        }
        const auto m = reader()->message(id);
        QCOMPARE(m.state, arbor::MessageState::stopped);
        QVERIFY2(m.text.starts_with("<think>") && m.text.find("</think>") == std::string::npos, m.text.c_str());
        QCOMPARE(thinking.current()->model->tokenizer().decode(ids(m.token_ids)), m.text.substr(7));
        auto again = session(thinking);
        QVERIFY(again);
        QCOMPARE(again->messages()->row(1).id, id);
        const auto [reasoning, answer] = parts(*again->messages(), 1);
        QVERIFY(reasoning.size() > 20);
        QVERIFY2(answer.isEmpty(), qPrintable(answer));
    }

    void stopWhileComposing() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send("Hello there"));
        s->stop();  // before the store has composed the turn: nothing is submitted
        QVERIFY(finished.wait(kWaitMs));
        QVERIFY(!s->generating());
        const auto m = reader()->message(finished.at(0).at(0).toLongLong());
        QCOMPARE(m.state, arbor::MessageState::stopped);
        QVERIFY(m.text.empty());
        QVERIFY(m.token_ids.empty());
        QTRY_COMPARE_WITH_TIMEOUT(s->messages()->rowCount(), 2, kWaitMs);
        QTest::qWait(100);
        const auto& row = s->messages()->row(1);
        QCOMPARE(row.id, m.id);
        QVERIFY(row.text.isEmpty());
        QCOMPARE(row.state, arbor::MessageState::stopped);
        QCOMPARE(row.stats.toMessage(), m.stats);
    }

    void closingASessionMidReplyStoresIt() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(replyStreaming(*s));
        const qint64 id = s->messages()->row(1).id;
        s.reset();  // cancels and writes what it had
        auto store = reader();
        QTRY_COMPARE_WITH_TIMEOUT(store->message(id).state, arbor::MessageState::stopped, kWaitMs);
        const auto m = store->message(id);
        QVERIFY(!m.text.empty());
        QVERIFY(!m.token_ids.empty());
        QCOMPARE(m.stats.finish_reason, std::string("cancelled"));
    }

    void closingASessionWhileComposing() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QVERIFY(s->send("Hello?"));
        s.reset();  // before the turn was composed: the message is still being tokenized
        auto store = reader();
        // The user message is kept; no reply row is added for a session that is gone.
        QTRY_VERIFY_WITH_TIMEOUT(store->latest_leaf(conv_).has_value(), kWaitMs);
        QTest::qWait(300);
        const auto m = store->message(*store->latest_leaf(conv_));
        QCOMPARE(m.role, arbor::Role::User);
        QCOMPARE(m.text, std::string("Hello?"));
        QVERIFY(!m.token_ids.empty());
    }

    // The session goes once the store has added the reply row, before (or just after) the
    // composed turn reached it: the row ends stopped, not 'streaming' with nothing
    // generating it (until the next start of the app marks it).
    void closingASessionOnceItsTurnIsSaved() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        auto store = reader();
        QVERIFY(s->send(QString("Tell me about trees. ").repeated(200)));
        // Events are processed one batch at a time, so the session is closed before the
        // composed turn's next hop after the save has run.
        std::optional<arbor::Message> replyRow;
        QElapsedTimer waited;
        waited.start();
        while (!replyRow && waited.elapsed() < kWaitMs) {
            QCoreApplication::processEvents();
            if (const auto leaf = store->latest_leaf(conv_); leaf && store->message(*leaf).role == arbor::Role::Assistant)
                replyRow = store->message(*leaf);
            else
                QThread::msleep(1);
        }
        QVERIFY(replyRow);
        s.reset();
        QTRY_COMPARE_WITH_TIMEOUT(store->message(replyRow->id).state, arbor::MessageState::stopped, kWaitMs);
        QCOMPARE(store->message(replyRow->id).stats.finish_reason, std::string("cancelled"));
        QCOMPARE(store->message(*replyRow->parent_id).role, arbor::Role::User);
    }

    void unloadingTheModelStopsTheReply() {
        ModelService own;
        const QString path = QString::fromStdString(arbor::test::model_path().string());
        own.load(path, 2, 64);
        QTRY_COMPARE_WITH_TIMEOUT(own.state(), QString("ready"), kWaitMs);
        auto s = session(own);
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(replyStreaming(*s));
        own.load(path, 2, 64);  // the same file again: the running reply ends first
        QVERIFY(!s->generating());
        QVERIFY(finished.wait(kWaitMs));
        const auto m = reader()->message(finished.at(0).at(0).toLongLong());
        QCOMPARE(m.state, arbor::MessageState::stopped);
        QCOMPARE(m.stats.finish_reason, std::string("model unloaded"));
        compareRow(*s->messages(), 1, m);
        QTRY_COMPARE_WITH_TIMEOUT(own.state(), QString("ready"), kWaitMs);
    }

    // A reply that fills the model's context ends there, complete, with its own reason
    // (not "stopped at max tokens", which offers to continue it), stored and shown so.
    void replyEndsWhenTheContextIsFull() {
        constexpr int kContext = 160;
        ModelService own;
        own.load(QString::fromStdString(arbor::test::model_path().string()), 2, 64, 0, QStringLiteral("f16"), kContext);
        QTRY_COMPARE_WITH_TIMEOUT(own.state(), QString("ready"), kWaitMs);
        QCOMPARE(own.contextSize(), kContext);
        auto s = session(own);
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());  // max tokens far past the context
        const qint64 id = reply(*s, [&] { return s->send(kLongAnswer); });
        QVERIFY(id);
        const auto m = reader()->message(id);
        QCOMPARE(m.state, arbor::MessageState::complete);
        QCOMPARE(m.stats.finish_reason, std::string("context full"));
        QVERIFY(m.stats.prompt_tokens.has_value());
        QCOMPARE(*m.stats.prompt_tokens + int(m.token_ids.size()), kContext);
        compareRow(*s->messages(), 1, m);
        const ReplyStats shown = s->messages()->row(1).stats;
        QCOMPARE(shown.finishReason, ReplyStats::FinishReason::ContextFull);
        const QString line = ReplyStatsText::format(shown);
        QVERIFY2(line.endsWith(QStringLiteral("stopped: the context is full")), qPrintable(line));
    }

    // A 65,000-character paste is tokenized on a pool thread: composing its turn costs
    // the GUI thread far less CPU time than tokenizing the text there does (both measured
    // here with the thread's own CPU clock, so a busy machine does not blur them; a
    // comparison, not a speed figure). The event loop's longest pause is reported.
    void longPasteIsTokenizedOffTheGuiThread() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QString text;
        for (int i = 0; text.size() < 65000; ++i)
            text += QString("Line %1 of the log: request %2 took %3 ms, status ok; retrying the next one.\n")
                        .arg(i)
                        .arg(i * 7919 % 100003)
                        .arg(i % 97);
        text.truncate(65000);
        double tokenizeMs = std::numeric_limits<double>::max();
        for (int i = 0; i < 2; ++i) {
            const double start = threadCpuMs();
            const auto tokens = formatter().encode_content(text.toStdString());
            tokenizeMs = std::min(tokenizeMs, threadCpuMs() - start);
            QVERIFY(tokens.size() > 10000);
        }
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QElapsedTimer clock;
        qint64 longestPause = 0;
        QTimer tick;
        tick.setInterval(5);
        connect(&tick, &QTimer::timeout, this, [&] { longestPause = std::max(longestPause, clock.restart()); });
        clock.start();
        tick.start();
        const double start = threadCpuMs();
        QVERIFY(s->send(text));
        QVERIFY(finished.wait(kWaitMs));  // an error: far longer than the context
        const double composeMs = threadCpuMs() - start;
        tick.stop();
        qInfo("GUI thread CPU: tokenizing there %.1f ms, composing the turn %.1f ms; longest pause %lld ms",
              tokenizeMs, composeMs, longestPause);
        QVERIFY2(composeMs * 2 < tokenizeMs,
                 qPrintable(QString("composing took %1 ms of the GUI thread, tokenizing %2 ms").arg(composeMs).arg(tokenizeMs)));
        auto store = reader();
        const auto m = store->message(*store->message(finished.at(0).at(0).toLongLong()).parent_id);
        QCOMPARE(m.text, text.toStdString());
        QVERIFY(ids(m.token_ids) == formatter().encode_content(text.toStdString()));
    }
};

QTEST_GUILESS_MAIN(TestChatSessionEnding)
#include "test_chat_session_ending.moc"
