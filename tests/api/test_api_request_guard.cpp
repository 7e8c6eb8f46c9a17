// What keeps web pages out of the API, over real HTTP on loopback: requests must name
// the server in their Host (DNS rebinding sends the attacker's name) and POST bodies must
// be declared JSON (a cross-site POST without a CORS preflight cannot be).
#include "api_test_fixture.h"

#include "arbor/error.h"

using arbor::api::Json;
using arbor::test::chat_body;
using arbor::test::HttpResponse;
using arbor::test::message;

namespace {

// One request sent byte for byte (so the Host lines are exactly what the test gives).
std::optional<HttpResponse> send_exactly(uint16_t port, const std::string& bytes) {
    arbor::test::HttpTestClient c(port, std::chrono::seconds(60));
    if (!c.send_raw(bytes)) return std::nullopt;
    return c.read_response();
}

std::optional<HttpResponse> get_with_host(uint16_t port, const std::string& path, const std::string& host) {
    return send_exactly(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n");
}

std::optional<HttpResponse> post_with_headers(uint16_t port, const std::string& path, const std::string& body,
                                              const std::vector<std::string>& headers) {
    return arbor::test::http_request(port, "POST", path, body, headers);
}

// "status code" of an OpenAI error body, or what was wrong with the response.
std::string error_of(const std::optional<HttpResponse>& r) {
    if (!r) return "<no response>";
    try {
        const Json body = Json::parse(r->body);
        const Json* e = body.find("error");
        if (!e || !e->find("message") || !e->find("message")->is_string() || e->find("message")->as_string().empty())
            return "<no error message: " + r->body + ">";
        if (!e->find("type") || e->find("type")->as_string() != "invalid_request_error") return "<bad type: " + r->body + ">";
        const Json* code = e->find("code");
        return std::to_string(r->status) + " " + (code && code->is_string() ? code->as_string() : "<null>");
    } catch (const std::exception&) {
        return "<not JSON: " + r->body + ">";
    }
}

Json one_message(const std::string& text) {
    Json a = Json::array();
    a.push_back(message("user", text));
    return a;
}

} // namespace

class TestApiRequestGuard : public QObject {
    Q_OBJECT
    arbor::test::ApiFixture f_;

    std::string chat() const { return chat_body(f_.model_id, one_message("hi"), 1).dump(); }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        f_.start();
    }
    void cleanupTestCase() { f_.stop(); }

    void namesOfThisServerAreAnswered_data() {
        QTest::addColumn<QString>("host");
        const QString port = QString::number(f_.port());
        QTest::newRow("127.0.0.1") << "127.0.0.1";
        QTest::newRow("127.0.0.1:port") << "127.0.0.1:" + port;
        QTest::newRow("localhost") << "localhost";
        QTest::newRow("LocalHost:port") << "LocalHost:" + port;
        QTest::newRow("[::1]") << "[::1]";
        QTest::newRow("[::1]:port") << "[::1]:" + port;
        QTest::newRow("[::1] spelled out") << "[0:0:0:0:0:0:0:1]";
        QTest::newRow("empty port") << "localhost:";
    }

    void namesOfThisServerAreAnswered() {
        QFETCH(QString, host);
        const auto r = get_with_host(f_.port(), "/v1/models", host.toStdString());
        QVERIFY(r);
        QCOMPARE(r->status, 200);
    }

    void otherNamesGet421_data() {
        QTest::addColumn<QString>("host");
        const QString port = QString::number(f_.port());
        QTest::newRow("rebound name") << "evil.example";
        QTest::newRow("rebound name with port") << "evil.example:" + port;
        QTest::newRow("localhost as a prefix") << "localhost.evil.example";
        QTest::newRow("address as a prefix") << "127.0.0.1.evil.example:" + port;
        QTest::newRow("another address") << "10.0.0.1";
        QTest::newRow("another IPv6 address") << "[fe80::1]:" + port;
    }

    void otherNamesGet421() {
        QFETCH(QString, host);
        const std::string h = host.toStdString();
        for (const char* path : {"/health", "/v1/models", "/v1/nothing"}) {
            const auto r = get_with_host(f_.port(), path, h);
            QCOMPARE(error_of(r), std::string("421 host_not_allowed"));
            QVERIFY2(r->body.find("--allowed-hosts") != std::string::npos, r->body.c_str());
        }
        // A generating request is refused before it runs.
        const std::string body = chat();
        const auto r = send_exactly(f_.port(), "POST /v1/chat/completions HTTP/1.1\r\nHost: " + h +
                                               "\r\nContent-Type: application/json\r\nContent-Length: " +
                                               std::to_string(body.size()) + "\r\n\r\n" + body);
        QCOMPARE(error_of(r), std::string("421 host_not_allowed"));
        QCOMPARE(r->header("content-type"), std::string("application/json"));
    }

    void missingDoubledOrMalformedHostIs400_data() {
        QTest::addColumn<QByteArray>("request");
        QTest::newRow("no Host") << QByteArray("GET /v1/models HTTP/1.1\r\n\r\n");
        QTest::newRow("no Host, HTTP/1.0") << QByteArray("GET /v1/models HTTP/1.0\r\n\r\n");
        QTest::newRow("two Hosts") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n");
        QTest::newRow("two equal Hosts") << QByteArray("GET /health HTTP/1.1\r\nHost: localhost\r\nhost: localhost\r\n\r\n");
        QTest::newRow("empty Host") << QByteArray("GET /v1/models HTTP/1.1\r\nHost:\r\n\r\n");
        QTest::newRow("space in Host") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: local host\r\n\r\n");
        QTest::newRow("two names") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: localhost, evil.example\r\n\r\n");
        QTest::newRow("port not a number") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: localhost:http\r\n\r\n");
        QTest::newRow("port too large") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: localhost:65536\r\n\r\n");
        QTest::newRow("unclosed bracket") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: [::1\r\n\r\n");
        QTest::newRow("bare IPv6") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: ::1\r\n\r\n");
        QTest::newRow("user info") << QByteArray("GET /v1/models HTTP/1.1\r\nHost: evil@localhost\r\n\r\n");
    }

    void missingDoubledOrMalformedHostIs400() {
        QFETCH(QByteArray, request);
        const auto r = send_exactly(f_.port(), request.toStdString());
        QCOMPARE(error_of(r), std::string("400 invalid_host"));
        QCOMPARE(f_.get("/health").status, 200);  // and the server goes on serving
    }

    void allowedHostsAreAnswered() {
        arbor::api::ApiServerOptions o;
        o.port = 0;
        o.allowed_hosts = {"My.Example", "fe80::1", "[fe80::2]", "192.168.7.7"};
        arbor::api::ApiServer server(*f_.engine, *f_.model, o);
        server.start();
        const std::string port = std::to_string(server.port());
        const std::vector<std::string> answered{"my.example",  "MY.EXAMPLE:" + port, "[fe80::1]",
                                                "[fe80::2]:" + port, "192.168.7.7", "localhost"};
        for (const std::string& host : answered) {
            const auto r = get_with_host(server.port(), "/v1/models", host);
            QVERIFY2(r && r->status == 200, host.c_str());
        }
        for (const std::string& host : std::vector<std::string>{"other.example", "sub.my.example", "192.168.7.8"})
            QVERIFY2(error_of(get_with_host(server.port(), "/v1/models", host)) == "421 host_not_allowed", host.c_str());

        o.allowed_hosts = {"*"};
        arbor::api::ApiServer any(*f_.engine, *f_.model, o);
        any.start();
        const auto r = get_with_host(any.port(), "/v1/models", "whatever.example");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        // Even "*" does not make a malformed or doubled Host acceptable.
        QCOMPARE(error_of(send_exactly(any.port(), "GET /v1/models HTTP/1.1\r\n\r\n")), std::string("400 invalid_host"));
    }

    void badAllowedHostIsRefused_data() {
        QTest::addColumn<QString>("host");
        QTest::newRow("with a port") << "my.example:8080";
        QTest::newRow("empty") << "";
        QTest::newRow("a URL") << "http://my.example";
        QTest::newRow("bad IPv6") << "[fe80::g]";
    }

    void badAllowedHostIsRefused() {
        QFETCH(QString, host);
        arbor::api::ApiServerOptions o;
        o.port = 0;
        o.allowed_hosts = {host.toStdString()};
        try {
            arbor::api::ApiServer server(*f_.engine, *f_.model, o);
            QFAIL("accepted");
        } catch (const arbor::Error& e) {
            QVERIFY2(std::string(e.what()).find("is not a host name or IP address") != std::string::npos, e.what());
        }
    }

    // Bound to every address, the server answers whatever address a client used, but
    // still no name it was not given.
    void wildcardAddressAnswersAnyAddress() {
        arbor::api::ApiServerOptions o;
        o.host = "0.0.0.0";
        o.port = 0;
        arbor::api::ApiServer server(*f_.engine, *f_.model, o);
        server.start();
        const std::vector<std::string> answered{"192.168.1.5:" + std::to_string(server.port()), "10.0.0.1",
                                                "[fe80::1]", "localhost"};
        for (const std::string& host : answered) {
            const auto r = get_with_host(server.port(), "/v1/models", host);
            QVERIFY2(r && r->status == 200, host.c_str());
        }
        QCOMPARE(error_of(get_with_host(server.port(), "/v1/models", "evil.example")), std::string("421 host_not_allowed"));
    }

    void postBodiesMustBeJson_data() {
        QTest::addColumn<QStringList>("headers");
        QTest::addColumn<QString>("expected");
        const QString refused = "415 unsupported_media_type";
        QTest::newRow("none") << QStringList{} << refused;
        QTest::newRow("text/plain") << QStringList{"Content-Type: text/plain"} << refused;
        QTest::newRow("text/plain from a page")
            << QStringList{"Content-Type: text/plain;charset=UTF-8", "Origin: https://evil.example"} << refused;
        QTest::newRow("form") << QStringList{"Content-Type: application/x-www-form-urlencoded"} << refused;
        QTest::newRow("multipart") << QStringList{"Content-Type: multipart/form-data; boundary=x"} << refused;
        QTest::newRow("json prefix") << QStringList{"Content-Type: application/jsonx"} << refused;
        QTest::newRow("json as a parameter") << QStringList{"Content-Type: text/plain; x=application/json"} << refused;
        QTest::newRow("latin-1") << QStringList{"Content-Type: application/json; charset=iso-8859-1"} << refused;
        QTest::newRow("two types") << QStringList{"Content-Type: application/json", "Content-Type: text/plain"}
                                   << "400 invalid_content_type";
        QTest::newRow("json") << QStringList{"Content-Type: application/json"} << "200";
        QTest::newRow("json, other case, charset")
            << QStringList{"Content-Type: Application/JSON; charset=UTF-8"} << "200";
        QTest::newRow("json, quoted charset") << QStringList{"Content-Type: application/json;charset=\"utf-8\""} << "200";
        QTest::newRow("json, other parameter") << QStringList{"Content-Type: application/json ; foo=bar"} << "200";
    }

    void postBodiesMustBeJson() {
        QFETCH(QStringList, headers);
        QFETCH(QString, expected);
        std::vector<std::string> h;
        for (const auto& s : headers) h.push_back(s.toStdString());
        for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
            Json body = Json::parse(chat());
            if (std::string(path) == "/v1/completions") {
                body = Json::object();
                body.set("model", f_.model_id);
                body.set("prompt", "hi");
                body.set("max_tokens", 1);
            }
            const auto r = post_with_headers(f_.port(), path, body.dump(), h);
            QVERIFY(r);
            if (expected == "200") {
                QVERIFY2(r->status == 200, r->body.c_str());
                QVERIFY(Json::parse(r->body).find("choices"));
            } else {
                QCOMPARE(QString::fromStdString(error_of(r)), expected);
                QVERIFY(!r->has("access-control-allow-origin"));  // CORS stays off by default
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestApiRequestGuard)
#include "test_api_request_guard.moc"
