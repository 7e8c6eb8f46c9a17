// A chat session (one tab) end to end: the real default model, a real database in a
// temporary directory, and a second connection to that file reading what the session
// wrote, as another process would. Replies are kept short (maxTokens 24) except where a
// reply must stream for a while. QAbstractItemModelTester watches the messages model of
// every session throughout.
#include "chat_session.h"
#include "test_support.h"

#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <QtTest>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

#include <time.h>

using arbor::app::ChatSession;
using arbor::app::MessageListModel;
using arbor::app::ModelService;
using arbor::app::StoreService;

namespace {

constexpr int kWaitMs = 60000;
// A prompt the default model answers at length (it runs to 400 tokens here at any
// temperature), for replies that must still be streaming when the test acts.
const QString kLongAnswer = QStringLiteral("Write a very long essay about the history of Rome.");
const QVariantMap kLongSettings{{"maxTokens", 1000}, {"temperature", 0.0}};
constexpr int kShortReply = 24;

std::vector<arbor::TokenId> ids(const std::vector<std::int32_t>& v) { return {v.begin(), v.end()}; }

// CPU time the calling thread has used, in ms (time spent waiting for a core excluded).
double threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// A session with a tester on its messages model; the tester goes first.
struct Watched {
    std::unique_ptr<ChatSession> session;
    std::unique_ptr<QAbstractItemModelTester> tester;

    ChatSession* operator->() const { return session.get(); }
    ChatSession& operator*() const { return *session; }
    ChatSession* get() const { return session.get(); }
    explicit operator bool() const { return bool(session); }
    void reset() {
        tester.reset();
        session.reset();
    }
};

} // namespace

class TestChatSession : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    ModelService models_;
    int n_ = 0;
    std::filesystem::path file_;
    qint64 conv_ = 0;
    std::unique_ptr<StoreService> service_;

    // A session on conv_, opened, its messages model under a tester.
    Watched session(ModelService& models) {
        Watched s;
        s.session = std::make_unique<ChatSession>(conv_, *service_, models);
        s.tester = std::make_unique<QAbstractItemModelTester>(s->messages(),
                                                              QAbstractItemModelTester::FailureReportingMode::Fatal);
        QSignalSpy opened(s.get(), &ChatSession::opened);
        QSignalSpy loaded(s->messages(), &MessageListModel::loaded);
        s->open();
        if (!opened.wait(kWaitMs) || !(loaded.size() > 0 || loaded.wait(kWaitMs))) s.reset();
        return s;
    }
    Watched session() { return session(models_); }

    // A second connection to the database file.
    std::unique_ptr<arbor::Store> reader() const { return std::make_unique<arbor::Store>(file_); }

    const arbor::ChatFormatter& formatter() const { return *models_.current()->formatter; }

    // Sends (or runs `start`) and waits until the reply is finished and stored.
    static qint64 reply(ChatSession& s, const std::function<bool()>& start) {
        QSignalSpy finished(&s, &ChatSession::replyFinished);
        if (!start()) return 0;
        if (!finished.wait(kWaitMs)) return 0;
        return finished.at(0).at(0).toLongLong();
    }

    static void saveSmall(ChatSession& s) {
        QCOMPARE(s.saveSettings({{"maxTokens", kShortReply}}), QString());
    }

    // The model's row shows what the store holds for the message.
    static void compareRow(const MessageListModel& model, int row, const arbor::Message& m) {
        const auto& r = model.row(row);
        QCOMPARE(r.id, m.id);
        QCOMPARE(r.parentId, m.parent_id.value_or(0));
        QCOMPARE(r.role, m.role);
        QCOMPARE(r.text, QString::fromStdString(m.text));
        QCOMPARE(r.state, m.state);
        QCOMPARE(r.stats.toMessage(), m.stats);
    }

    // A finished short reply as stored: ids, text and every measured figure.
    void checkReply(const arbor::Message& m, int promptTokens) {
        QCOMPARE(m.role, arbor::Role::Assistant);
        QCOMPARE(m.state, arbor::MessageState::complete);
        QVERIFY(!m.token_ids.empty());
        QVERIFY(int(m.token_ids.size()) <= kShortReply);
        QVERIFY(!m.text.empty());
        const auto& stop = formatter().stop_tokens();
        auto content = ids(m.token_ids);
        if (m.stats.finish_reason == "stop") {
            QVERIFY(std::find(stop.begin(), stop.end(), content.back()) != stop.end());
            content.pop_back();
        } else {
            QCOMPARE(m.stats.finish_reason, std::string("length"));
            QCOMPARE(int(m.token_ids.size()), kShortReply);
        }
        QCOMPARE(models_.current()->model->tokenizer().decode(content), m.text);
        QCOMPARE(m.stats.prompt_tokens, std::optional<int>(promptTokens));
        QVERIFY(m.stats.cached_tokens.has_value());
        QVERIFY(*m.stats.cached_tokens >= 0 && *m.stats.cached_tokens < promptTokens);
        QVERIFY(m.stats.ttft_ms.has_value() && *m.stats.ttft_ms > 0.0);
        if (m.token_ids.size() > 1) QVERIFY(m.stats.tokens_per_second.has_value() && *m.stats.tokens_per_second > 0.0);
    }

    // The prompt the session must have composed for a reply below `leaf`, from the ids
    // stored along the path (and the system prompt, when set).
    // The path's first `omitted` messages left out (they did not fit the context).
    std::vector<arbor::TokenId> expectedPrompt(arbor::Store& store, arbor::MessageId leaf, int omitted = 0) const {
        std::vector<arbor::ChatMessage> chat;
        const auto settings = store.conversation_settings(conv_);
        if (!settings.system_prompt.empty())
            chat.push_back({arbor::Role::System, formatter().encode_content(settings.system_prompt)});
        const auto path = store.path(leaf);
        for (size_t i = size_t(omitted); i < path.size(); ++i) chat.push_back({path[i].role, ids(path[i].token_ids)});
        return formatter().compose(chat);
    }

    // Waits until the streaming reply (last row) shows some text.
    static bool replyStreaming(ChatSession& s) {
        return QTest::qWaitFor([&] {
            const auto* m = s.messages();
            return s.generating() && m->rowCount() > 0 && m->row(m->rowCount() - 1).role == arbor::Role::Assistant &&
                   m->row(m->rowCount() - 1).text.size() > 0;
        }, kWaitMs);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        models_.load(QString::fromStdString(arbor::test::model_path().string()), 2, 64);
        QTRY_COMPARE_WITH_TIMEOUT(models_.state(), QString("ready"), kWaitMs);
    }

    void init() {
        file_ = std::filesystem::path(dir_.path().toStdString()) / ("db" + std::to_string(++n_)) / "arbor.db";
        conv_ = arbor::Store(file_).create_conversation("");
        service_ = std::make_unique<StoreService>(file_);
        service_->open();
    }

    void cleanup() { service_.reset(); }

    void sendStoresTheTurnAndTitlesTheConversation() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QSignalSpy retitled(s.get(), &ChatSession::retitled);
        const QString question = "What is the capital of France?\nAnswer in one word.";
        const qint64 id = reply(*s, [&] {
            const bool ok = s->send(question);
            return ok && s->generating();
        });
        QVERIFY(id != 0);
        QVERIFY(!s->generating());
        QVERIFY(s->error().isEmpty());

        auto store = reader();
        QCOMPARE(store->conversation(conv_).title, std::string("What is the capital of France?"));  // first line
        QCOMPARE(s->title(), QString("What is the capital of France?"));
        QCOMPARE(retitled.size(), 1);
        const auto path = store->path(id);
        QCOMPARE(int(path.size()), 2);
        QCOMPARE(path[0].role, arbor::Role::User);
        QCOMPARE(path[0].text, question.toStdString());
        QCOMPARE(ids(path[0].token_ids), formatter().encode_content(question.toStdString()));
        QVERIFY(!path[0].parent_id);
        QCOMPARE(path[1].parent_id, std::optional<arbor::MessageId>(path[0].id));
        checkReply(path[1], int(expectedPrompt(*store, path[0].id).size()));

        const auto* model = s->messages();
        QCOMPARE(model->rowCount(), 2);
        compareRow(*model, 0, path[0]);
        compareRow(*model, 1, path[1]);
        QCOMPARE(arbor::app::storedFinishReason(model->row(1).stats.finishReason, model->row(1).stats.error),
                 path[1].stats.finish_reason);

        // A second message does not retitle.
        QVERIFY(reply(*s, [&] { return s->send("And of Italy?"); }) != 0);
        QCOMPARE(retitled.size(), 1);
        QCOMPARE(s->title(), QString("What is the capital of France?"));
        QCOMPARE(reader()->conversation(conv_).title, std::string("What is the capital of France?"));
    }

    void longFirstMessageMakesAShortTitle() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const QString text = "   Please   explain how a refrigerator keeps food cold, step by step, in detail.";
        QVERIFY(reply(*s, [&] { return s->send(text); }) != 0);
        // The first line, spaces folded, cut to 47 characters and an ellipsis.
        const QString title = QString::fromUtf8("Please explain how a refrigerator keeps food co\u2026");
        QCOMPARE(title.size(), 48);
        QCOMPARE(s->title(), title);
        QCOMPARE(QString::fromStdString(reader()->conversation(conv_).title), title);
    }

    void followUpPromptExtendsThePreviousOne() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Name three colors."); });
        QVERIFY(first != 0);
        // The user takes a moment to type: the warm-up of the next turn's opening is done.
        models_.current()->engine->wait_idle();
        const qint64 second = reply(*s, [&] { return s->send("Name three more."); });
        QVERIFY(second != 0);

        auto store = reader();
        const auto path = store->path(second);
        QCOMPARE(int(path.size()), 4);
        QCOMPARE(path[1].id, first);
        const int firstPrompt = *path[1].stats.prompt_tokens;
        const auto prompt = expectedPrompt(*store, path[2].id);
        checkReply(path[3], int(prompt.size()));
        // The second prompt starts with the first prompt and the reply's own ids, so the
        // engine reuses their KV (all but the page still being filled at most).
        const auto firstIds = expectedPrompt(*store, path[0].id);
        QVERIFY(std::equal(firstIds.begin(), firstIds.end(), prompt.begin()));
        QVERIFY(std::equal(path[1].token_ids.begin(), path[1].token_ids.end(), prompt.begin() + firstIds.size()));
        QCOMPARE(int(firstIds.size()), firstPrompt);
        // Everything up to the user's new words was in the cache: the previous prompt, the
        // reply and, computed after the reply, its end of turn and the next user header.
        const auto warmed = formatter().follow_up_prefix(firstIds, path[1].token_ids);
        QVERIFY(std::equal(warmed.begin(), warmed.end(), prompt.begin()));
        const int cached = *path[3].stats.cached_tokens;
        QVERIFY2(cached == int(warmed.size()),
                 qPrintable(QString("cached %1 of %2; warmed prefix %3").arg(cached).arg(prompt.size()).arg(warmed.size())));

        const auto* model = s->messages();
        QCOMPARE(model->rowCount(), 4);
        for (int i = 0; i < 4; ++i) compareRow(*model, i, path[size_t(i)]);
    }

    void regenerateMakesASiblingReply() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Say something nice."); });
        QVERIFY(first != 0);
        const QString firstText = s->messages()->row(1).text;
        QSignalSpy leaf(s.get(), &ChatSession::leafChanged);
        const qint64 second = reply(*s, [&] { return s->regenerate(1); });
        QVERIFY(second != 0 && second != first);
        QVERIFY(leaf.size() >= 1);

        auto store = reader();
        const auto user = store->path(first).front();
        const auto replies = store->children(user.id);
        QCOMPARE(int(replies.size()), 2);
        QCOMPARE(replies[0].id, first);
        QCOMPARE(replies[1].id, second);
        QCOMPARE(int(store->roots(conv_).size()), 1);  // no new user message
        checkReply(replies[1], *replies[0].stats.prompt_tokens);  // the same prompt again

        auto* model = s->messages();
        QTRY_COMPARE_WITH_TIMEOUT(model->rowCount(), 2, kWaitMs);
        QCOMPARE(model->row(1).id, second);
        QCOMPARE(model->row(1).branchIndex, 1);
        QCOMPARE(model->row(1).branchCount, 2);
        QCOMPARE(model->row(0).branchCount, 1);
        compareRow(*model, 1, replies[1]);

        QSignalSpy loaded(model, &MessageListModel::loaded);
        model->previousBranch(1);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(1).id, first);
        QCOMPARE(model->row(1).text, firstText);
        QCOMPARE(model->row(1).branchIndex, 0);
        QCOMPARE(model->row(1).branchCount, 2);
        model->nextBranch(1);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(1).id, second);

        QVERIFY(!s->regenerate(0));  // a user message
        QVERIFY(!s->error().isEmpty());
        QVERIFY(!s->regenerate(7));
        QVERIFY(!s->generating());
        QCOMPARE(int(reader()->children(user.id).size()), 2);
    }

    void editMakesASiblingTurn() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        const qint64 first = reply(*s, [&] { return s->send("Name a fruit."); });
        QVERIFY(first != 0);
        const qint64 second = reply(*s, [&] { return s->edit(0, "Name a vegetable."); });
        QVERIFY(second != 0);

        auto store = reader();
        const auto roots = store->roots(conv_);
        QCOMPARE(int(roots.size()), 2);  // both versions of the message are kept
        QCOMPARE(roots[0].text, std::string("Name a fruit."));
        QCOMPARE(roots[1].text, std::string("Name a vegetable."));
        QCOMPARE(int(store->children(roots[0].id).size()), 1);
        QCOMPARE(store->children(roots[0].id)[0].id, first);
        const auto edited = store->children(roots[1].id);
        QCOMPARE(int(edited.size()), 1);
        QCOMPARE(edited[0].id, second);
        checkReply(edited[0], int(expectedPrompt(*store, roots[1].id).size()));
        QCOMPARE(store->conversation(conv_).title, std::string("Name a fruit."));  // titled once

        auto* model = s->messages();
        QCOMPARE(model->rowCount(), 2);
        compareRow(*model, 0, roots[1]);
        compareRow(*model, 1, edited[0]);
        QCOMPARE(model->row(0).branchIndex, 1);
        QCOMPARE(model->row(0).branchCount, 2);
        QSignalSpy loaded(model, &MessageListModel::loaded);
        model->previousBranch(0);
        QVERIFY(loaded.wait(kWaitMs));
        QCOMPARE(model->row(0).text, QString("Name a fruit."));
        QCOMPARE(model->row(1).id, first);

        QVERIFY(!s->edit(1, "a reply is not mine"));
        QVERIFY(!s->error().isEmpty());
        QVERIFY(!s->edit(0, "   "));
        QCOMPARE(int(reader()->roots(conv_).size()), 2);
    }

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

    void readersSeeTheReplyGrowWhileItStreams() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings(kLongSettings), QString());
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(QTest::qWaitFor([&] { return s->messages()->rowCount() == 2; }, kWaitMs));
        const qint64 id = s->messages()->row(1).id;
        QCOMPARE(s->messages()->row(1).role, arbor::Role::Assistant);

        // Samples of what the view shows and what another connection reads, while the
        // reply streams (at most 2.5 s of it).
        struct Sample {
            qint64 t;
            int shown, stored;
        };
        QList<Sample> samples;
        auto store = reader();
        QElapsedTimer clock;
        clock.start();
        int growths = 0, lastStored = 0;
        bool prefix = true;  // the database holds a beginning of what the view shows
        qint64 streamed = 0;  // how long the store showed the reply as streaming
        while (finished.isEmpty() && clock.elapsed() < 2500) {
            const auto m = store->message(id);
            if (m.state != arbor::MessageState::streaming) break;
            const QString storedText = QString::fromStdString(m.text);
            const int row = s->messages()->rowOf(id);
            const QString shownText = row >= 0 ? s->messages()->row(row).text : QString();
            prefix &= shownText.startsWith(storedText);
            const int stored = int(storedText.size()), shown = int(shownText.size());
            samples.push_back({clock.elapsed(), shown, stored});
            streamed = samples.back().t;
            if (stored > lastStored) ++growths;
            lastStored = stored;
            QTest::qWait(50);
        }
        s->stop();
        if (finished.isEmpty()) QVERIFY(finished.wait(kWaitMs));
        QVERIFY(prefix);
        QVERIFY2(streamed >= 1000, qPrintable(QString("the reply streamed only %1 ms").arg(streamed)));
        // The partial text grew in the database at least once a second.
        QVERIFY2(growths >= int(streamed / 1000),
                 qPrintable(QString("the stored text grew %1 times in %2 ms of streaming").arg(growths).arg(streamed)));
        // Whatever the view showed a second ago is in the database now.
        for (const Sample& now : samples) {
            int due = 0;
            for (const Sample& then : samples)
                if (now.t - then.t >= 1000) due = std::max(due, then.shown);
            QVERIFY2(now.stored >= due, qPrintable(QString("at %1 ms the store had %2 characters, %3 were shown a second before")
                                                       .arg(now.t).arg(now.stored).arg(due)));
        }
        const auto m = store->message(id);
        QVERIFY(m.state != arbor::MessageState::streaming);
        compareRow(*s->messages(), 1, m);
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

    void twoSessionsGenerateAtOnce() {
        auto first = session();
        QVERIFY(first);
        const qint64 firstConv = conv_;
        conv_ = reader()->create_conversation("");
        auto second = session();
        QVERIFY(second);
        saveSmall(*first);
        saveSmall(*second);
        QSignalSpy firstDone(first.get(), &ChatSession::replyFinished);
        QSignalSpy secondDone(second.get(), &ChatSession::replyFinished);
        QVERIFY(first->send("Name a planet."));
        QVERIFY(second->send("Name an ocean."));
        QVERIFY(firstDone.size() == 1 || firstDone.wait(kWaitMs));
        QVERIFY(secondDone.size() == 1 || secondDone.wait(kWaitMs));
        auto store = reader();
        for (auto [s, conv, done] : {std::tuple{first.get(), firstConv, &firstDone}, {second.get(), conv_, &secondDone}}) {
            const auto id = done->at(0).at(0).toLongLong();
            const auto path = store->path(id);
            QCOMPARE(int(path.size()), 2);
            QCOMPARE(path[1].conversation_id, conv);
            checkReply(path[1], int(expectedPrompt(*store, path[0].id).size()));
            QCOMPARE(s->messages()->rowCount(), 2);
            compareRow(*s->messages(), 1, path[1]);
        }
    }

    void promptTooLongIsAnError() {
        auto s = session();
        QVERIFY(s);
        saveSmall(*s);
        QString text;
        for (int i = 0; i < 1000; ++i) text += QString("word%1 ").arg(i);  // far more than the context holds
        const qint64 id = reply(*s, [&] { return s->send(text); });
        QVERIFY(id != 0);
        QVERIFY(!s->generating());
        const auto m = reader()->message(id);
        QCOMPARE(m.state, arbor::MessageState::error);
        QVERIFY(m.text.empty());
        QVERIFY2(QString::fromStdString(m.stats.finish_reason).startsWith("error: ") &&
                     QString::fromStdString(m.stats.finish_reason).contains("context"),
                 m.stats.finish_reason.c_str());
        QVERIFY2(s->error().contains("context"), qPrintable(s->error()));
        QTRY_COMPARE_WITH_TIMEOUT(s->messages()->rowCount(), 2, kWaitMs);
        const auto& row = s->messages()->row(1);
        QCOMPARE(row.id, m.id);
        QVERIFY(row.text.isEmpty());
        QTRY_COMPARE(s->messages()->row(1).state, arbor::MessageState::error);
    }

    // A context of 512 tokens, outgrown within a few turns: never an error; each prompt
    // holds the system prompt and the newest whole turns with room for the reply, the
    // newest message always; the cut stays put on the turn after it first moved, whose
    // history then comes from the prefix cache.
    void overflowLeavesOutTheOldestTurnsAndKeepsTheCache() {
        ModelService small;
        small.load(QString::fromStdString(arbor::test::model_path().string()), 2, 64, 0, QStringLiteral("f16"), 512);
        QTRY_COMPARE_WITH_TIMEOUT(small.state(), QString("ready"), kWaitMs);
        QCOMPARE(small.contextSize(), 512);
        auto s = session(small);
        QVERIFY(s);
        QCOMPARE(s->saveSettings({{"maxTokens", kShortReply}, {"temperature", 0.0},
                                  {"systemPrompt", "You are a terse pirate."}}),
                 QString());
        int firstOverflow = -1, lastOmitted = 0, lastPrompt = 0;
        for (int turn = 0; turn < 16; ++turn) {
            QString text = QString("Question %1 about the sea:").arg(turn);
            for (int w = 0; w < 12; ++w) text += QString(" wave%1").arg(w);
            const qint64 id = reply(*s, [&] { return s->send(text); });
            QVERIFY(id != 0);
            QCOMPARE(s->error(), QString());
            auto store = reader();
            const arbor::Message m = store->message(id);
            QCOMPARE(m.state, arbor::MessageState::complete);
            const auto path = store->path(*m.parent_id);
            QCOMPARE(path.back().text, text.toStdString());
            const int omitted = m.stats.omitted_messages.value_or(0);
            QCOMPARE(s->omittedMessages(), omitted);
            QVERIFY(omitted < int(path.size()));  // the newest message is in
            QCOMPARE(omitted % 2, 0);             // whole turns
            QCOMPARE(path[size_t(omitted)].role, arbor::Role::User);
            const int prompt = *m.stats.prompt_tokens;
            QCOMPARE(prompt, int(expectedPrompt(*store, path.back().id, omitted).size()));  // system prompt included
            QVERIFY2(prompt + kShortReply <= 512, qPrintable(QString::number(prompt)));
            QVERIFY(omitted >= lastOmitted);
            if (firstOverflow < 0) {
                if (omitted > 0) {
                    firstOverflow = turn;
                    // Left out because the whole conversation no longer fit.
                    QVERIFY(int(expectedPrompt(*store, path.back().id).size()) + kShortReply > 512);
                }
            } else {
                // The turn after the first overflow: same cut, its history from the cache
                // (the previous prompt and reply, which the warm-up extended).
                QCOMPARE(omitted, lastOmitted);
                QVERIFY2(*m.stats.cached_tokens >= lastPrompt, qPrintable(QString("%1 cached, previous prompt %2")
                                                                          .arg(*m.stats.cached_tokens).arg(lastPrompt)));
                qInfo("turn %d left out %d messages; turn %d: %d of %d prompt tokens from the cache", firstOverflow,
                      omitted, turn, *m.stats.cached_tokens, prompt);
                break;
            }
            lastOmitted = omitted;
            lastPrompt = prompt;
        }
        QVERIFY2(firstOverflow > 0, "the conversation never outgrew the context");
        QCOMPARE(s->messages()->rowCount(), 2 * (firstOverflow + 2));
        s.reset();
        // Reopened, the session tells where the context starts from the last reply.
        auto again = session(small);
        QVERIFY(again);
        QCOMPARE(again->omittedMessages(), lastOmitted);
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

    void refusesWhatItCannotStart() {
        auto s = session();
        QVERIFY(s);
        QCOMPARE(s->saveSettings({{"maxTokens", 200}}), QString());
        QSignalSpy errors(s.get(), &ChatSession::errorChanged);
        QVERIFY(!s->send("   "));  // nothing to send
        QVERIFY(s->send("Tell me about the moon."));
        QVERIFY(s->generating());
        QVERIFY(!s->send("And the sun?"));  // while a reply is being generated
        QVERIFY(s->error().contains("still being generated"));
        QVERIFY(!s->regenerate(1));
        QVERIFY(!s->edit(0, "changed"));
        QVERIFY(errors.size() >= 1);
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        s->stop();
        QVERIFY(finished.wait(kWaitMs));
        QCOMPARE(int(reader()->roots(conv_).size()), 1);
        QCOMPARE(int(reader()->path(*reader()->latest_leaf(conv_)).size()), 2);

        ModelService none;
        auto idle = session(none);
        QVERIFY(idle);
        QVERIFY(!idle->send("Anyone there?"));
        QCOMPARE(idle->error(), QString("no model is loaded"));
        QVERIFY(!idle->generating());
        QCOMPARE(int(reader()->path(*reader()->latest_leaf(conv_)).size()), 2);  // nothing stored
        // A successful start clears the error.
        QVERIFY(s->send("Thanks."));
        QVERIFY(s->error().isEmpty());
        QSignalSpy done(s.get(), &ChatSession::replyFinished);
        s->stop();
        QVERIFY(done.wait(kWaitMs));
    }

    // Settings saved right after open(), before its read of the stored ones comes back
    // (as after Ctrl+N), are not overwritten by that older read.
    void settingsSavedWhileOpeningAreKept() {
        ChatSession s(conv_, *service_, models_);
        QSignalSpy opened(&s, &ChatSession::opened);
        s.open();
        QCOMPARE(s.saveSettings({{"maxTokens", kShortReply}}), QString());
        QVERIFY(opened.wait(kWaitMs));
        QCOMPARE(s.maxTokens().toInt(), kShortReply);
        QTRY_COMPARE(reader()->conversation(conv_).settings.max_tokens, std::optional<int>(kShortReply));
    }

    void settingsAreValidatedAndKept() {
        auto s = session();
        QVERIFY(s);
        QVERIFY(!s->temperature().isValid());  // all defaults at first
        QVERIFY(!s->maxTokens().isValid());
        QVERIFY(s->systemPrompt().isEmpty());
        QSignalSpy changed(s.get(), &ChatSession::settingsChanged);

        const QVariantMap good{{"systemPrompt", "You are a pirate."}, {"temperature", 0.2}, {"topP", "0.5"},
                               {"topK", 10}, {"maxTokens", kShortReply}};
        QCOMPARE(s->saveSettings(good), QString());
        QCOMPARE(changed.size(), 1);
        QCOMPARE(s->systemPrompt(), QString("You are a pirate."));
        QCOMPARE(s->temperature().toDouble(), 0.2);
        QCOMPARE(s->topP().toDouble(), 0.5);
        QCOMPARE(s->topK().toInt(), 10);
        QCOMPARE(s->maxTokens().toInt(), kShortReply);

        auto rejected = [&](const QVariantMap& bad, const char* key) {
            const QString error = s->saveSettings(bad);
            QVERIFY2(error.contains(key), qPrintable(error));
        };
        rejected({{"temperature", 3}}, "temperature");
        rejected({{"temperature", "abc"}}, "temperature");
        rejected({{"temperature", -0.1}}, "temperature");
        rejected({{"topP", 1.5}}, "topP");
        rejected({{"topK", 2.5}}, "topK");
        rejected({{"topK", -1}}, "topK");
        rejected({{"maxTokens", 0}}, "maxTokens");
        rejected({{"maxTokens", "lots"}}, "maxTokens");
        QCOMPARE(changed.size(), 1);  // nothing changed by a rejected save
        QCOMPARE(s->temperature().toDouble(), 0.2);
        QCOMPARE(s->maxTokens().toInt(), kShortReply);

        // The system prompt goes in front of the conversation.
        const qint64 id = reply(*s, [&] { return s->send("Hello!"); });
        QVERIFY(id != 0);
        {
            auto store = reader();
            const auto path = store->path(id);
            QCOMPARE(int(path.size()), 2);  // the system prompt is a setting, not a message
            const auto prompt = expectedPrompt(*store, path[0].id);
            const auto withoutSystem = formatter().compose({{arbor::Role::User, ids(path[0].token_ids)}});
            QVERIFY(prompt.size() > withoutSystem.size());
            checkReply(path[1], int(prompt.size()));
        }

        // Empty values mean "the default"; other keys keep what was given.
        QCOMPARE(s->saveSettings({{"systemPrompt", "Be brief."}, {"temperature", ""}, {"topP", QVariant()},
                                  {"topK", 5}, {"maxTokens", " 32 "}}),
                 QString());
        QVERIFY(!s->temperature().isValid());
        QVERIFY(!s->topP().isValid());
        arbor::ConversationSettings expected;
        expected.system_prompt = "Be brief.";
        expected.top_k = 5;
        expected.max_tokens = 32;
        QTRY_VERIFY_WITH_TIMEOUT(reader()->conversation_settings(conv_) == expected, kWaitMs);

        auto again = session();  // a new session on the same conversation reads them back
        QVERIFY(again);
        QCOMPARE(again->systemPrompt(), QString("Be brief."));
        QVERIFY(!again->temperature().isValid());
        QVERIFY(!again->topP().isValid());
        QCOMPARE(again->topK().toInt(), 5);
        QCOMPARE(again->maxTokens().toInt(), 32);
        QCOMPARE(again->title(), QString("Hello!"));
        QCOMPARE(again->messages()->rowCount(), 2);
    }
};

QTEST_GUILESS_MAIN(TestChatSession)
#include "test_chat_session.moc"
