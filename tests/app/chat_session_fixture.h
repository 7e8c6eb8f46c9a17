// The fixture of the chat-session suites: the real default model loaded once, a fresh
// database file per test with one conversation, sessions on it whose messages model runs
// under QAbstractItemModelTester, and a second connection reading what they wrote.
#pragma once

#include "chat_session.h"
#include "test_support.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

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

// The suites call initFixture, initDatabase and closeDatabase from their initTestCase,
// init and cleanup slots.
class ChatSessionFixture : public QObject {
protected:
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

    void initFixture() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        models_.load(QString::fromStdString(arbor::test::model_path().string()), 2, 64);
        QTRY_COMPARE_WITH_TIMEOUT(models_.state(), QString("ready"), kWaitMs);
    }

    void initDatabase() {
        file_ = std::filesystem::path(dir_.path().toStdString()) / ("db" + std::to_string(++n_)) / "arbor.db";
        conv_ = arbor::Store(file_).create_conversation("");
        service_ = std::make_unique<StoreService>(file_);
        service_->open();
    }

    void closeDatabase() { service_.reset(); }
};
