// Conversations on a remote OpenAI-compatible server: the real arbor-server, started here
// on a free loopback port with the default model and an API key, is the remote; a
// ChatSession on a real database uses one of its models with no local model loaded. A
// reply streams in and is stored like a local one (regenerated as a branch, reopened with
// the same model), a stop stores it cancelled, and every failure (a wrong key, a server
// killed mid-reply, one that never answers, one that answers 503, a stream cut before its
// end, nothing listening) ends the reply as an error with its reason, never a hang. A
// reasoning model's thoughts sent apart from its answer are shown apart and not sent back.
#include "arbor_server_process.h"
#include "chat_session_fixture.h"
#include "remote_endpoints.h"
#include "scripted_http_server.h"
#include "secret_store.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <csignal>
#include <fstream>
#include <iterator>

using arbor::app::RemoteEndpoints;
using arbor::app::RemoteModelRef;

namespace {

const QString kKey = QStringLiteral("remote-test-key-41");
const QString kModelId = QStringLiteral("SmolLM2-135M-Instruct.Q4_1");
const QVariantMap kShortSettings{{"maxTokens", kShortReply}, {"temperature", 0.0}};

QString baseUrl(quint16 port) { return QStringLiteral("http://127.0.0.1:%1/v1").arg(port); }

} // namespace

class TestRemoteChat : public ChatSessionFixture {
    Q_OBJECT

    QProcess server_;  // the remote most tests use
    quint16 port_ = 0;
    std::unique_ptr<QTemporaryDir> kvDir_;
    std::unique_ptr<arbor::app::SecretStore> secrets_;
    std::unique_ptr<RemoteEndpoints> remotes_;

    quint16 startServer(QProcess& p) {
        if (!kvDir_) kvDir_ = std::make_unique<QTemporaryDir>();
        return arbor::test::startArborServer(p, kKey, kvDir_->path());
    }

    // Adds the endpoint at `url` with `key` and waits until its models are listed.
    bool addEndpoint(RemoteEndpoints& remotes, const QString& url, const QString& key) {
        QSignalSpy listed(&remotes, &RemoteEndpoints::listed);
        if (!remotes.add(url, key).isEmpty()) return false;
        return listed.wait(kWaitMs);
    }

    QVariantMap endpoint(const RemoteEndpoints& remotes, const QString& url) const {
        for (const QVariant& e : remotes.endpoints())
            if (e.toMap().value("url") == url) return e.toMap();
        return {};
    }

    static QString ref(quint16 port, const QString& model = kModelId) {
        return RemoteModelRef{QUrl(baseUrl(port)), model}.toString();
    }

    // A session on conv_ using the remote model `model`, with `settings`.
    Watched remoteSession(const QString& model, const QVariantMap& settings = kShortSettings) {
        Watched s = session();
        if (!s) return s;
        s->useModel(model);
        if (!s->saveSettings(settings).isEmpty()) s.reset();
        return s;
    }

    // Sends `text` and waits for the reply to be stored; the stored reply (id 0 if none).
    arbor::Message sendAndWait(ChatSession& s, const QString& text) {
        const qint64 id = reply(s, [&] { return s.send(text); });
        return id ? reader()->message(id) : arbor::Message{};
    }

    // The stored reply is an error whose reason contains `reason`, shown as the session's
    // error and as the row's.
    static void checkErrorReply(ChatSession& s, const arbor::Message& m, const QString& reason) {
        QCOMPARE(m.role, arbor::Role::Assistant);
        QCOMPARE(m.state, arbor::MessageState::error);
        QVERIFY2(QString::fromStdString(m.stats.finish_reason).startsWith("error: "), m.stats.finish_reason.c_str());
        QVERIFY2(QString::fromStdString(m.stats.finish_reason).contains(reason), m.stats.finish_reason.c_str());
        QVERIFY2(s.error().contains(reason), qPrintable(s.error()));
        QVERIFY(!s.generating());
        const auto& row = s.messages()->row(s.messages()->rowCount() - 1);
        QCOMPARE(row.id, m.id);
        QCOMPARE(row.state, arbor::MessageState::error);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        port_ = startServer(server_);
        QVERIFY(port_ != 0);
        // No local model is loaded: every reply here comes from the server.
        QVERIFY(!models_.ready());
    }

    void cleanupTestCase() { QVERIFY(arbor::test::stopArborServer(server_)); }

    void init() {
        initDatabase();
        secrets_ = std::make_unique<arbor::app::SecretStore>(file_.parent_path() / "secrets", false);
        remotes_ = std::make_unique<RemoteEndpoints>(*service_, secrets_.get());
        remotes_->setStallMs(20000);
        models_.setRemotes(remotes_.get());
    }

    void cleanup() {
        models_.setRemotes(nullptr);
        remotes_.reset();
        closeDatabase();
    }

    void listsTheServersModelsAndKeepsTheKeyOutOfTheDatabase() {
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), kKey));
        const QVariantMap e = endpoint(*remotes_, baseUrl(port_));
        QCOMPARE(e.value("error").toString(), QString());
        QCOMPARE(e.value("hasKey").toBool(), true);
        QCOMPARE(e.value("host").toString(), QStringLiteral("127.0.0.1:%1").arg(port_));
        const QVariantList models = remotes_->models();
        QCOMPARE(models.size(), 1);
        QCOMPARE(models[0].toMap().value("id").toString(), kModelId);
        QCOMPARE(models[0].toMap().value("ref").toString(), ref(port_));
        QCOMPARE(models[0].toMap().value("label").toString(), kModelId + QStringLiteral(" @ 127.0.0.1:%1").arg(port_));

        // The URL is in the database; the key is only in the secret store.
        service_.reset();  // every write is done
        const auto stored = arbor::Store(file_).app_setting(RemoteEndpoints::kSettingKey);
        QVERIFY(stored.has_value());
        QVERIFY(QString::fromStdString(*stored).contains(baseUrl(port_)));
        auto holdsKey = [](const std::filesystem::path& file) {
            std::ifstream in(file, std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(in)), {});
            return bytes.find(kKey.toStdString()) != std::string::npos;
        };
        for (const auto& f : std::filesystem::directory_iterator(file_.parent_path()))
            if (f.is_regular_file()) QVERIFY2(!holdsKey(f.path()), f.path().c_str());
        int keyFiles = 0;
        for (const auto& f : std::filesystem::directory_iterator(file_.parent_path() / "secrets")) keyFiles += holdsKey(f.path());
        QCOMPARE(keyFiles, 1);

        // A new start reads the endpoint and its key back, and lists its models again.
        service_ = std::make_unique<StoreService>(file_);
        service_->open();
        RemoteEndpoints again(*service_, secrets_.get());
        QSignalSpy listed(&again, &RemoteEndpoints::listed);
        again.load();
        QVERIFY(listed.wait(kWaitMs));
        QCOMPARE(endpoint(again, baseUrl(port_)).value("hasKey").toBool(), true);
        QCOMPARE(again.models().size(), 1);
    }

    void refusesBadUrlsAndShowsAWrongKey() {
        QVERIFY(!remotes_->add("ftp://example.org", {}).isEmpty());
        QVERIFY(!remotes_->add("not a url", {}).isEmpty());
        QVERIFY(!remotes_->add("http://host:1/v1?x=1", {}).isEmpty());
        QVERIFY(remotes_->endpoints().isEmpty());
        // A base URL without a path serves under /v1.
        QVERIFY(addEndpoint(*remotes_, QStringLiteral("http://127.0.0.1:%1").arg(port_), "wrong-key"));
        const QVariantMap e = endpoint(*remotes_, baseUrl(port_));
        QVERIFY2(e.value("error").toString().contains("refused the API key (HTTP 401)"), qPrintable(e.value("error").toString()));
        QVERIFY(remotes_->models().isEmpty());
        // The right key lists its models.
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), kKey));
        QCOMPARE(remotes_->endpoints().size(), 1);
        QCOMPARE(remotes_->models().size(), 1);
        remotes_->remove(baseUrl(port_));
        QVERIFY(remotes_->endpoints().isEmpty());
    }

    void replyStreamsAndIsStoredRegeneratedAndReopened() {
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), kKey));
        auto s = remoteSession(ref(port_));
        QVERIFY(s);
        QVERIFY(s->remote());
        QSignalSpy tokens(s->messages(), &MessageListModel::textAppended);
        const arbor::Message first = sendAndWait(*s, "What is the capital of France?");
        QCOMPARE(first.state, arbor::MessageState::complete);
        QVERIFY2(s->error().isEmpty(), qPrintable(s->error()));
        QVERIFY(!first.text.empty());
        QVERIFY(tokens.size() > 1);  // it came in pieces, not at once
        QVERIFY(first.stats.finish_reason == "stop" || first.stats.finish_reason == "length");
        // The server's usage: the prompt it templated, and the first text's time.
        QVERIFY(first.stats.prompt_tokens.has_value() && *first.stats.prompt_tokens > 5);
        QVERIFY(first.stats.ttft_ms.has_value() && *first.stats.ttft_ms > 0.0);
        QVERIFY(first.stats.tokens_per_second.has_value() && *first.stats.tokens_per_second > 0.0);
        QVERIFY(first.token_ids.empty());  // the server's ids are not this app's
        compareRow(*s->messages(), 1, first);
        QCOMPARE(reader()->conversation(conv_).model, ref(port_).toStdString());

        // A second turn sends the history: its prompt holds the first turn.
        const arbor::Message second = sendAndWait(*s, "And of Italy?");
        QCOMPARE(second.state, arbor::MessageState::complete);
        QVERIFY(*second.stats.prompt_tokens > *first.stats.prompt_tokens + 5);

        // Regenerating makes a sibling branch of the reply.
        const qint64 again = reply(*s, [&] { return s->regenerate(3); });
        QVERIFY(again != 0);
        const auto siblings = reader()->children(*reader()->message(again).parent_id);
        QCOMPARE(siblings.size(), size_t(2));
        QCOMPARE(reader()->message(again).state, arbor::MessageState::complete);
        QCOMPARE(*reader()->message(again).stats.prompt_tokens, *second.stats.prompt_tokens);

        // A remote reply cannot be continued (the API has no such request).
        QVERIFY(!s->continueReply(s->messages()->rowCount() - 1));

        // Reopened, the conversation uses the same remote model.
        s.reset();
        auto reopened = session();
        QVERIFY(reopened);
        QCOMPARE(reopened->modelPath(), ref(port_));
        QVERIFY(reopened->remote());
        QCOMPARE(sendAndWait(*reopened, "Thanks!").state, arbor::MessageState::complete);
    }

    void stopStoresTheReplyCancelled() {
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), kKey));
        auto s = remoteSession(ref(port_), kLongSettings);
        QVERIFY(s);
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(replyStreaming(*s));
        s->stop();
        QVERIFY(finished.wait(kWaitMs));
        const arbor::Message m = reader()->message(finished.at(0).at(0).toLongLong());
        QCOMPARE(m.state, arbor::MessageState::stopped);
        QCOMPARE(m.stats.finish_reason, std::string("cancelled"));
        QVERIFY(!m.text.empty());
        compareRow(*s->messages(), 1, m);
        QVERIFY(s->error().isEmpty());
    }

    void wrongKeyGivesAnErrorReply() {
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), "wrong-key"));
        auto s = remoteSession(ref(port_));
        QVERIFY(s);
        checkErrorReply(*s, sendAndWait(*s, "Hello"), QStringLiteral("refused the API key (HTTP 401)"));
        // Without a key the server says one is needed.
        QVERIFY(addEndpoint(*remotes_, baseUrl(port_), {}));
        checkErrorReply(*s, sendAndWait(*s, "Hello again"), QStringLiteral("needs an API key (HTTP 401)"));
    }

    void serverKilledMidReplyKeepsThePartialText() {
        QProcess doomed;
        const quint16 port = startServer(doomed);
        QVERIFY(port != 0);
        QVERIFY(addEndpoint(*remotes_, baseUrl(port), kKey));
        auto s = remoteSession(ref(port), kLongSettings);
        QVERIFY(s);
        QSignalSpy finished(s.get(), &ChatSession::replyFinished);
        QVERIFY(s->send(kLongAnswer));
        QVERIFY(replyStreaming(*s));
        ::kill(pid_t(doomed.processId()), SIGKILL);
        QVERIFY(doomed.waitForFinished(10000));
        QVERIFY(finished.wait(kWaitMs));
        const arbor::Message m = reader()->message(finished.at(0).at(0).toLongLong());
        checkErrorReply(*s, m, QStringLiteral("127.0.0.1:%1").arg(port));
        QVERIFY(!m.text.empty());
        QCOMPARE(s->messages()->row(1).text, QString::fromStdString(m.text));
    }

    void streamCutBeforeItsEndIsAnError() {
        // One piece of text, then the connection closes without [DONE].
        ScriptedHttpServer cut("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                               "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half a sen\"}}]}\n\n",
                               true);
        auto s = remoteSession(ref(cut.port(), "any"));
        QVERIFY(s);
        const arbor::Message m = sendAndWait(*s, "Hello");
        checkErrorReply(*s, m, QStringLiteral("ended before the reply was complete"));
        QCOMPARE(m.text, std::string("Half a sen"));
    }

    // A reasoning model's thoughts arrive apart from its answer ("reasoning_content", or
    // "reasoning" as some servers name it): stored inside <think> before the answer, shown
    // apart from it, and left out of the history the next turn sends. (A reply cut off while
    // still reasoning keeps its thoughts closed off, with an empty answer: the next test.)
    void reasoningIsShownApartAndNotSentBack() {
        const QByteArray head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        ScriptedHttpServer thinking(
            head +
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,"
                "\"reasoning_content\":\"The user greets me; \"}}]}\n\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"answer kindly.\"}}]}\n\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello \"}}]}\n\n"
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"there!\"},\"finish_reason\":\"stop\"}]}\n\n"
                "data: [DONE]\n\n",
            true);
        auto s = remoteSession(ref(thinking.port(), "any"));
        QVERIFY(s);
        const arbor::Message m = sendAndWait(*s, "Hello");
        QCOMPARE(m.state, arbor::MessageState::complete);
        QCOMPARE(m.text, std::string("<think>The user greets me; answer kindly.</think>Hello there!"));
        const QModelIndex row = s->messages()->index(1);
        QCOMPARE(row.data(MessageListModel::ReasoningRole).toString(), QStringLiteral("The user greets me; answer kindly."));
        QCOMPARE(row.data(MessageListModel::AnswerRole).toString(), QStringLiteral("Hello there!"));

        sendAndWait(*s, "And again");
        const QJsonArray sent = QJsonDocument::fromJson(thinking.lastBody()).object().value("messages").toArray();
        QCOMPARE(sent.size(), 3);
        QCOMPARE(sent[1].toObject().value("role").toString(), QStringLiteral("assistant"));
        QCOMPARE(sent[1].toObject().value("content").toString(), QStringLiteral("Hello there!"));
        QCOMPARE(sent[2].toObject().value("content").toString(), QStringLiteral("And again"));
    }

    void replyCutWhileReasoningKeepsItsThoughtsApart() {
        const QByteArray head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        ScriptedHttpServer cut(head +
                                   "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Let me think\"}}]}\n\n",
                               true);
        auto c = remoteSession(ref(cut.port(), "any"));
        QVERIFY(c);
        const arbor::Message partial = sendAndWait(*c, "Hello");
        QCOMPARE(partial.state, arbor::MessageState::error);
        QCOMPARE(partial.text, std::string("<think>Let me think</think>"));
    }

    void serverErrorEventEndsTheReply() {
        ScriptedHttpServer failing("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                                   "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
                                   "data: {\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\"}}\n\n"
                                   "data: [DONE]\n\n",
                                   true);
        auto s = remoteSession(ref(failing.port(), "any"));
        QVERIFY(s);
        const arbor::Message m = sendAndWait(*s, "Hello");
        checkErrorReply(*s, m, QStringLiteral("the server reported an error: out of memory"));
        QCOMPARE(m.text, std::string("Hi"));
    }

    void errorStatusIsAnErrorReply() {
        ScriptedHttpServer busy("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 45\r\n"
                                "Connection: close\r\n\r\n{\"error\":{\"message\":\"the queue is full now\"}}",
                                true);
        auto s = remoteSession(ref(busy.port(), "any"));
        QVERIFY(s);
        checkErrorReply(*s, sendAndWait(*s, "Hello"), QStringLiteral("answered HTTP 503: the queue is full now"));
    }

    void stalledServerTimesOut() {
        ScriptedHttpServer silent({}, false);  // takes the request, never answers
        remotes_->setStallMs(1500);
        auto s = remoteSession(ref(silent.port(), "any"));
        QVERIFY(s);
        checkErrorReply(*s, sendAndWait(*s, "Hello"), QStringLiteral("sent nothing for 1.5 s"));
        QCOMPARE(silent.requests(), 1);
    }

    void unreachableServerIsAnErrorReply() {
        quint16 port = 0;
        {
            QTcpServer probe;  // a port that was free a moment ago, closed again
            QVERIFY(probe.listen(QHostAddress::LocalHost));
            port = probe.serverPort();
        }
        auto s = remoteSession(ref(port, "any"));
        QVERIFY(s);
        checkErrorReply(*s, sendAndWait(*s, "Hello"), QStringLiteral("cannot reach 127.0.0.1:%1").arg(port));
    }
};

QTEST_GUILESS_MAIN(TestRemoteChat)
#include "test_remote_chat.moc"
