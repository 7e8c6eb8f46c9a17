// The API switch end to end: settings in a real database, the default model, and HTTP
// over real sockets to the server the controller starts and stops.
#include "api_controller.h"
#include "test_support.h"

#include <QHostAddress>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>
#include <optional>
#include <vector>

using arbor::app::ApiController;
using arbor::app::LoadedModel;
using arbor::app::SecretStore;
using arbor::app::StoreService;

namespace {

constexpr int kStartMs = 15000;
const QString kModelName = QStringLiteral("api-test-model");

struct HttpReply {
    int status = -1;  // -1: no connection or no answer
    QByteArray head;  // status line and headers
    QByteArray body;
};

// One request on its own connection; reads the headers, then Content-Length bytes.
HttpReply httpGet(int port, const QByteArray& path, const QList<QPair<QByteArray, QByteArray>>& headers = {}) {
    QTcpSocket socket;
    socket.connectToHost(QHostAddress::LocalHost, quint16(port));
    if (!socket.waitForConnected(5000)) return {};
    QByteArray request = "GET " + path + " HTTP/1.1\r\nConnection: close\r\n";
    bool host = false;
    for (const auto& [name, value] : headers) {
        request += name + ": " + value + "\r\n";
        host = host || name.toLower() == "host";
    }
    if (!host) request += "Host: 127.0.0.1\r\n";
    request += "\r\n";
    socket.write(request);
    socket.waitForBytesWritten(5000);

    QByteArray data;
    HttpReply reply;
    qsizetype bodyStart = -1, length = -1;
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < 20000) {
        if (bodyStart < 0 && (bodyStart = data.indexOf("\r\n\r\n")) >= 0) {
            bodyStart += 4;
            reply.head = data.left(bodyStart);
            for (const QByteArray& line : reply.head.split('\n'))
                if (line.toLower().startsWith("content-length:")) length = line.mid(15).trimmed().toLongLong();
        }
        if (bodyStart >= 0 && length >= 0 && data.size() - bodyStart >= length) break;
        if (!socket.waitForReadyRead(1000) && socket.state() != QAbstractSocket::ConnectedState) break;
        data += socket.readAll();
    }
    data += socket.readAll();
    if (bodyStart < 0) return {};
    reply.body = data.mid(bodyStart);
    const QList<QByteArray> statusLine = reply.head.left(reply.head.indexOf("\r\n")).split(' ');
    if (statusLine.size() >= 2 && statusLine[0].startsWith("HTTP/1.")) reply.status = statusLine[1].toInt();
    return reply;
}

bool canConnect(int port) {
    QTcpSocket socket;
    socket.connectToHost(QHostAddress::LocalHost, quint16(port));
    return socket.waitForConnected(2000);
}

// A port nothing listens on right now.
int freePort() {
    QTcpServer probe;
    if (!probe.listen(QHostAddress::LocalHost, 0)) return 0;
    const int port = probe.serverPort();
    probe.close();
    return port;
}

QString localUrl(int port) { return QStringLiteral("http://127.0.0.1:%1/v1").arg(port); }

} // namespace

class TestApiController : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    int databases_ = 0;
    std::shared_ptr<LoadedModel> model_;
    std::unique_ptr<StoreService> store_;
    std::unique_ptr<SecretStore> secrets_;  // files in the test's directory, never the user's keyring
    std::vector<std::unique_ptr<ApiController>> controllers_;

    // Controllers live until cleanup(), which lets their store answers arrive first.
    ApiController& make() {
        controllers_.push_back(std::make_unique<ApiController>(*store_, *secrets_));
        return *controllers_.back();
    }

    // Loads the stored settings; false when loaded() never came.
    static bool load(ApiController& c) {
        QSignalSpy loaded(&c, &ApiController::loaded);
        c.load();
        return loaded.wait(5000);
    }

    // A running server on a free port: enabled, model set, listening.
    bool startServing(ApiController& c, int& port) {
        port = freePort();
        if (port == 0) return false;
        c.setModel(model_);
        c.setPort(port);
        c.setEnabled(true);
        (void)QTest::qWaitFor([&] { return c.listening() || !c.error().isEmpty(); }, kStartMs);
        return c.listening();
    }

    std::optional<std::string> storedSetting(const char* key) {
        std::optional<std::string> value;
        bool done = false;
        QObject receiver;
        store_->call(
            &receiver, [key = std::string(key)](arbor::Store& s) { return s.app_setting(key); },
            [&](std::optional<std::string> v) {
                value = std::move(v);
                done = true;
            },
            [&](const QString&) { done = true; });
        (void)QTest::qWaitFor([&] { return done; }, 5000);
        return value;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        model_ = std::make_shared<LoadedModel>();
        model_->model = arbor::Model::load(arbor::test::model_path());
        arbor::EngineOptions o;
        o.backend.kv_budget_bytes = size_t(64) << 20;
        o.backend.threads = 2;
        model_->engine = std::make_unique<arbor::Engine>(*model_->model, o);
        model_->name = kModelName;
    }

    void init() {
        store_ = std::make_unique<StoreService>(
            std::filesystem::path(dir_.filePath(QStringLiteral("api%1.sqlite").arg(++databases_)).toStdString()));
        store_->open();
        secrets_ = std::make_unique<SecretStore>(
            std::filesystem::path(dir_.filePath(QStringLiteral("secrets%1").arg(databases_)).toStdString()),
            /*useKeyring=*/false);
    }

    void cleanup() {
        // A store round trip: every earlier answer to a controller is posted by then.
        storedSetting("api.enabled");
        controllers_.clear();
        store_.reset();
    }

    void cleanupTestCase() { model_.reset(); }

    void offByDefault() {
        auto& c = make();
        QVERIFY(load(c));
        QCOMPARE(c.enabled(), false);
        QCOMPARE(c.host(), QString("127.0.0.1"));
        QCOMPARE(c.port(), 8080);
        QVERIFY(c.apiKey().isEmpty());
        QVERIFY(c.corsOrigins().isEmpty());
        QVERIFY(!c.exposed());

        const int port = freePort();
        QVERIFY(port != 0);
        c.setPort(port);
        c.setModel(model_);
        QTest::qWait(300);
        QVERIFY(!c.listening());
        QVERIFY(c.url().isEmpty());
        QVERIFY(c.error().isEmpty());
        QVERIFY(!canConnect(port));
    }

    void enablingServesHttp() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        QCOMPARE(c.url(), localUrl(port));
        QVERIFY(c.error().isEmpty());

        const auto health = httpGet(port, "/health");
        QCOMPARE(health.status, 200);
        QVERIFY(health.body.contains("ok"));
        const auto models = httpGet(port, "/v1/models");  // no key set: open
        QCOMPARE(models.status, 200);
        QVERIFY2(models.body.contains(kModelName.toUtf8()), models.body.constData());
    }

    void apiKeyIsRequiredOnceSet() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        QCOMPARE(httpGet(port, "/v1/models").status, 200);

        c.setApiKey(QStringLiteral("s3cret-key"));  // restarts the server
        QVERIFY(!c.listening());
        QTRY_VERIFY_WITH_TIMEOUT(c.listening(), kStartMs);
        QCOMPARE(c.url(), localUrl(port));

        QCOMPARE(httpGet(port, "/v1/models").status, 401);
        QCOMPARE(httpGet(port, "/v1/models", {{"Authorization", "Bearer wrong-key"}}).status, 401);
        QCOMPARE(httpGet(port, "/v1/models", {{"Authorization", "Bearer s3cret-key"}}).status, 200);
        QCOMPARE(httpGet(port, "/health").status, 200);
    }

    void corsOriginsAreApplied() {
        auto& c = make();
        QVERIFY(load(c));
        c.setCorsOrigins(QStringLiteral("http://a.example, http://b.example"));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));

        const auto allowed = httpGet(port, "/health", {{"Origin", "http://b.example"}});
        QCOMPARE(allowed.status, 200);
        QVERIFY2(allowed.head.toLower().contains("access-control-allow-origin: http://b.example"),
                 allowed.head.constData());
        const auto other = httpGet(port, "/health", {{"Origin", "http://c.example"}});
        QCOMPARE(other.status, 200);
        QVERIFY(!other.head.toLower().contains("access-control-allow-origin"));
    }

    void allowedHostsAreApplied() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        QCOMPARE(httpGet(port, "/health", {{"Host", "arbor.test"}}).status, 421);

        c.setAllowedHosts(QStringLiteral(" arbor.test, other.test "));  // restarts the server
        QTRY_VERIFY_WITH_TIMEOUT(c.listening(), kStartMs);
        QCOMPARE(httpGet(port, "/health", {{"Host", "arbor.test"}}).status, 200);
        QCOMPARE(httpGet(port, "/health", {{"Host", "other.test:8080"}}).status, 200);
        QCOMPARE(httpGet(port, "/health", {{"Host", "evil.example"}}).status, 421);

        // A list the server would refuse keeps it stopped, saying which entry is wrong.
        c.setAllowedHosts(QStringLiteral("arbor.test, bad host:1"));
        QTRY_VERIFY(c.error().contains(QStringLiteral("'bad host:1'")));
        QVERIFY(!c.listening());
        QTRY_VERIFY_WITH_TIMEOUT(!canConnect(port), kStartMs);
    }

    // A key an older version kept in the database moves to the secret store on load and
    // is deleted from the database; it still guards the server.
    void storedKeyMovesOutOfTheDatabase() {
        bool written = false;
        QObject receiver;
        store_->call(
            &receiver, [](arbor::Store& s) { s.set_app_setting("api.key", "legacy-key"); }, [&] { written = true; },
            [&](const QString&) { written = true; });
        QTRY_VERIFY(written);
        QCOMPARE(storedSetting("api.key"), std::optional<std::string>("legacy-key"));

        auto& c = make();
        QVERIFY(load(c));
        QCOMPARE(c.apiKey(), QString("legacy-key"));
        QCOMPARE(secrets_->read("api-key"), std::optional<std::string>("legacy-key"));
        QCOMPARE(storedSetting("api.key"), std::nullopt);
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        QCOMPARE(httpGet(port, "/v1/models").status, 401);
        QCOMPARE(httpGet(port, "/v1/models", {{"Authorization", "Bearer legacy-key"}}).status, 200);

        // Cleared, it is erased from the secret store too.
        c.setApiKey(QString());
        QVERIFY(!secrets_->read("api-key"));
        auto& again = make();
        QVERIFY(load(again));
        QCOMPARE(again.apiKey(), QString());
    }

    void settingsPersist() {
        auto& a = make();
        QVERIFY(load(a));
        QSignalSpy enabledChanged(&a, &ApiController::enabledChanged);
        a.setEnabled(true);
        a.setHost(QStringLiteral(" ::1 "));
        a.setPort(12345);
        a.setApiKey(QStringLiteral("key-1"));
        a.setCorsOrigins(QStringLiteral("http://x.example"));
        a.setAllowedHosts(QStringLiteral("arbor.test"));
        a.setShareCache(true);
        QCOMPARE(enabledChanged.size(), 1);
        QCOMPARE(a.host(), QString("::1"));
        QCOMPARE(a.error(), QString("no model loaded"));  // enabled, but nothing to serve
        QVERIFY(!a.listening());

        auto& b = make();
        QSignalSpy portChanged(&b, &ApiController::portChanged);
        QVERIFY(load(b));
        QCOMPARE(portChanged.size(), 1);
        QCOMPARE(b.enabled(), true);
        QCOMPARE(b.host(), QString("::1"));
        QCOMPARE(b.port(), 12345);
        QCOMPARE(b.apiKey(), QString("key-1"));
        QCOMPARE(b.corsOrigins(), QString("http://x.example"));
        QCOMPARE(b.allowedHosts(), QString("arbor.test"));
        QCOMPARE(b.shareCache(), true);

        // The keys named by the settings' documentation.
        QCOMPARE(storedSetting("api.enabled"), std::optional<std::string>("true"));
        QCOMPARE(storedSetting("api.host"), std::optional<std::string>("::1"));
        QCOMPARE(storedSetting("api.port"), std::optional<std::string>("12345"));
        // The key is in the secret store, not in the database.
        QCOMPARE(storedSetting("api.key"), std::nullopt);
        QCOMPARE(secrets_->read("api-key"), std::optional<std::string>("key-1"));
        QCOMPARE(storedSetting("api.cors_origins"), std::optional<std::string>("http://x.example"));
        QCOMPARE(storedSetting("api.allowed_hosts"), std::optional<std::string>("arbor.test"));
        QCOMPARE(storedSetting("api.share_cache"), std::optional<std::string>("true"));
    }

    void exposedForNonLoopbackHosts() {
        auto& c = make();
        const QList<QPair<QString, bool>> cases = {
            {"127.0.0.1", false}, {"127.0.0.2", false}, {"::1", false},    {"0.0.0.0", true},
            {"192.168.1.10", true}, {"::", true},       {"localhost", false}, {"not an address", false},
        };
        for (const auto& [host, exposed] : cases) {
            c.setHost(host);
            QVERIFY2(c.exposed() == exposed, qPrintable(host));
        }
    }

    void badHostIsRefused() {
        auto& c = make();
        QVERIFY(load(c));
        const int port = freePort();
        c.setModel(model_);
        c.setPort(port);
        c.setHost(QStringLiteral("localhost"));  // a name, not an address
        c.setEnabled(true);
        QVERIFY2(c.error().contains("not an IP address"), qPrintable(c.error()));
        QTest::qWait(300);
        QVERIFY(!c.listening());
        QVERIFY(c.url().isEmpty());
        QVERIFY(!canConnect(port));

        c.setHost(QStringLiteral("127.0.0.1"));
        QTRY_VERIFY_WITH_TIMEOUT(c.listening(), kStartMs);
        QVERIFY(c.error().isEmpty());
    }

    void portZeroIsRefused() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        c.setPort(0);
        QVERIFY(!c.listening());
        QVERIFY2(c.error().contains("65535"), qPrintable(c.error()));
        QTRY_VERIFY(!canConnect(port));
        c.setPort(70000);
        QVERIFY2(c.error().contains("70000"), qPrintable(c.error()));
        QVERIFY(!c.listening());
    }

    void portInUseReportsTheBindError() {
        QTcpServer blocker;
        QVERIFY(blocker.listen(QHostAddress::LocalHost, 0));
        const int port = blocker.serverPort();
        auto& c = make();
        QVERIFY(load(c));
        c.setModel(model_);
        c.setPort(port);
        c.setEnabled(true);
        QTRY_VERIFY_WITH_TIMEOUT(!c.error().isEmpty(), kStartMs);
        QVERIFY(!c.listening());
        QVERIFY(c.url().isEmpty());
        QVERIFY2(c.error().contains(QString::number(port)), qPrintable(c.error()));
    }

    void removingTheModelStopsTheServer() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        const long uses = model_.use_count();
        QVERIFY(uses >= 3);  // ours, the controller's, the running server's

        c.setModel(nullptr);
        QVERIFY(!c.listening());
        QVERIFY(c.url().isEmpty());
        QCOMPARE(c.error(), QString("no model loaded"));
        QTRY_VERIFY(!canConnect(port));
        QTRY_COMPARE(model_.use_count(), 1L);  // the controller let go of it entirely

        c.setModel(model_);
        QTRY_VERIFY_WITH_TIMEOUT(c.listening(), kStartMs);
        QCOMPARE(httpGet(port, "/health").status, 200);
    }

    void disablingClosesThePort() {
        auto& c = make();
        QVERIFY(load(c));
        int port = 0;
        QVERIFY2(startServing(c, port), qPrintable(c.error()));
        QVERIFY(canConnect(port));
        c.setEnabled(false);
        QVERIFY(!c.listening());
        QVERIFY(c.url().isEmpty());
        QVERIFY(c.error().isEmpty());
        QTRY_VERIFY(!canConnect(port));
        QTest::qWait(200);
        QVERIFY(!c.listening());
    }

    void staleStatusIsIgnored() {
        auto& c = make();
        QVERIFY(load(c));
        const int first = freePort();
        int second = freePort();
        while (second == first) second = freePort();
        QStringList urls;
        connect(&c, &ApiController::statusChanged, this, [&] { urls << c.url(); });
        // Two restarts queued before either answer is seen: the first server does start,
        // but its status belongs to a superseded restart.
        c.setModel(model_);
        c.setPort(first);
        c.setEnabled(true);
        c.setPort(second);
        QTRY_VERIFY_WITH_TIMEOUT(c.listening(), kStartMs);
        QCOMPARE(c.url(), localUrl(second));
        QTest::qWait(200);
        QCOMPARE(c.url(), localUrl(second));
        QVERIFY2(!urls.contains(localUrl(first)), qPrintable(urls.join(", ")));
        QVERIFY(!canConnect(first));
        QCOMPARE(httpGet(second, "/health").status, 200);
    }
};

QTEST_GUILESS_MAIN(TestApiController)
#include "test_api_controller.moc"
