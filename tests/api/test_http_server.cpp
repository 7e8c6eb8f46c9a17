// The HTTP/1.1 server without a model: framing (Content-Length, chunked both ways,
// 100-continue, pipelining, keep-alive), every refusal, the connection cap, noticing a
// client that left, and a prompt stop with connections open.
#include "http_test_client.h"
#include "test_support.h"

#include "api/http_server.h"
#include "arbor/error.h"

#include <atomic>
#include <thread>

using arbor::api::HttpHeaders;
using arbor::api::HttpRequest;
using arbor::api::HttpServer;
using arbor::api::HttpServerOptions;
using arbor::api::ResponseWriter;
using arbor::test::HttpTestClient;
using arbor::test::http_request;

namespace {

class EchoHandler : public arbor::api::HttpHandler {
public:
    std::atomic<bool> saw_gone{false};
    std::atomic<HttpServer*> server{nullptr};
    std::atomic<int> refusals{0};

    void handle(const HttpRequest& req, ResponseWriter& out) override {
        if (req.path == "/stream") {
            out.begin_stream(200, {{"Content-Type", "text/plain"}});
            for (const char* piece : {"one ", "two ", "three"}) out.write(piece);
            out.end_stream();
        } else if (req.path == "/wait-gone") {
            // Answers nothing until the client leaves, as a handler in a long prefill would.
            for (int i = 0; i < 1000 && !out.client_gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            saw_gone = out.client_gone();
            out.send(200, {}, "late");
        } else if (req.path == "/until-stop") {
            // Streams until the server stops, then ends its answer as an API stream would.
            out.begin_stream(200, {{"Content-Type", "text/plain"}});
            out.write("started ");
            for (int i = 0; i < 1000 && !server.load()->stopping(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            out.write(server.load()->stopping() ? "stopped" : "never stopped");
            out.end_stream();
        } else if (req.path == "/silent") {
            // Produces no response: the server must answer 500 itself.
        } else {
            const std::string* te = req.header("x-test");
            out.send(200, {{"X-Echo", te ? *te : "-"}}, req.method + " " + req.target + "\n" + req.body);
        }
    }
    void refuse(const HttpRequest&, int status, const std::string& message, ResponseWriter& out) override {
        ++refusals;
        out.send(status, {{"Content-Type", "text/plain"}}, message);
    }
};

} // namespace

class TestHttpServer : public QObject {
    Q_OBJECT
    EchoHandler handler_;
    std::unique_ptr<HttpServer> server_;
    uint16_t port_ = 0;

    void start(int max_connections = 8) {
        HttpServerOptions o;
        o.port = 0;
        o.max_body_bytes = 1000;
        o.max_head_bytes = 2000;
        o.max_connections = max_connections;
        server_ = std::make_unique<HttpServer>(o, handler_);
        handler_.server = server_.get();
        server_->start();
        port_ = server_->port();
    }

private slots:
    void init() { start(); }
    void cleanup() { server_.reset(); }

    void bindsAnEphemeralPort() {
        QVERIFY(port_ != 0);
        // The same port cannot be bound twice.
        HttpServerOptions o;
        o.port = port_;
        HttpServer second(o, handler_);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, second.start());
    }

    void answersAndKeepsTheConnection() {
        HttpTestClient c(port_);
        QVERIFY(c.send_request("GET", "/x?y=1", {}, {"X-Test: hello"}));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->body, std::string("GET /x?y=1\n"));
        QCOMPARE(r->header("x-echo"), std::string("hello"));
        QVERIFY(!r->has("connection"));
        QVERIFY(c.send_request("POST", "/p", "body bytes"));
        r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->body, std::string("POST /p\nbody bytes"));
    }

    void pipelinedRequestsAnswerInOrder() {
        HttpTestClient c(port_);
        QVERIFY(c.send_raw("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyzGET /c HTTP/1.1\r\n\r\n"));
        for (const char* want : {"GET /a\n", "POST /b\nxyz", "GET /c\n"}) {
            auto r = c.read_response();
            QVERIFY(r);
            QCOMPARE(r->body, std::string(want));
        }
    }

    void decodesChunkedBodiesAndHonoursExpect() {
        HttpTestClient c(port_);
        QVERIFY(c.send_raw("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"));
        auto interim = c.read_head();
        QVERIFY(interim);
        QCOMPARE(interim->status, 100);
        QVERIFY(c.send_raw("5;ext=1\r\nhello\r\n"));
        QVERIFY(c.send_raw("7\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->body, std::string("POST /c\nhello, world"));
    }

    void streamsWithChunkedEncoding() {
        HttpTestClient c(port_);
        QVERIFY(c.send_request("GET", "/stream"));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->header("transfer-encoding"), std::string("chunked"));
        QCOMPARE(r->body, std::string("one two three"));
        // HTTP/1.0 has no chunks: the body runs to the close.
        HttpTestClient old(port_);
        QVERIFY(old.send_raw("GET /stream HTTP/1.0\r\n\r\n"));
        r = old.read_response();
        QVERIFY(r);
        QCOMPARE(r->header("connection"), std::string("close"));
        QCOMPARE(r->body, std::string("one two three"));
    }

    void connectionCloseIsHonoured() {
        HttpTestClient c(port_);
        QVERIFY(c.send_request("GET", "/x", {}, {"Connection: close"}));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->header("connection"), std::string("close"));
        QVERIFY(c.wait_closed());
    }

    void refusesBadRequests_data() {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<int>("status");
        QTest::newRow("garbage") << QByteArray("HELLO\r\n\r\n") << 400;
        QTest::newRow("bad version") << QByteArray("GET / HTTP/2.0\r\n\r\n") << 400;
        QTest::newRow("relative target") << QByteArray("GET x HTTP/1.1\r\n\r\n") << 400;
        QTest::newRow("bad header") << QByteArray("GET / HTTP/1.1\r\nNoColon\r\n\r\n") << 400;
        QTest::newRow("folded header") << QByteArray("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n") << 400;
        QTest::newRow("bad length") << QByteArray("POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n") << 400;
        QTest::newRow("two lengths") << QByteArray("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n") << 400;
        QTest::newRow("length and chunked")
            << QByteArray("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n") << 400;
        QTest::newRow("gzip") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") << 501;
        QTest::newRow("body too large") << QByteArray("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n") << 413;
        QTest::newRow("chunked too large") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n") << 413;
        QTest::newRow("bad chunk size") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n") << 400;
        QTest::newRow("head too large") << QByteArray("GET / HTTP/1.1\r\nX: " + QByteArray(3000, 'a') + "\r\n\r\n") << 431;
        QTest::newRow("bad expect") << QByteArray("POST / HTTP/1.1\r\nExpect: magic\r\nContent-Length: 1\r\n\r\n") << 417;
    }

    void refusesBadRequests() {
        QFETCH(QByteArray, raw);
        QFETCH(int, status);
        HttpTestClient c(port_);
        QVERIFY(c.send_raw(raw.toStdString()));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, status);
        QCOMPARE(r->header("connection"), std::string("close"));
        QVERIFY(!r->body.empty());
        QVERIFY(c.wait_closed());
        // The server goes on serving.
        auto ok = http_request(port_, "GET", "/after");
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    void answersWhenTheHandlerDoesNot() {
        auto r = http_request(port_, "GET", "/silent");
        QVERIFY(r);
        QCOMPARE(r->status, 500);
    }

    // At the connection limit an idle connection makes room for a new one; only when
    // every connection is being answered is the new one refused.
    void idleConnectionsMakeRoom() {
        server_.reset();
        start(2);
        HttpTestClient a(port_), b(port_);
        QVERIFY(a.send_request("GET", "/a"));
        QVERIFY(a.read_response());
        QVERIFY(b.send_request("GET", "/b"));
        QVERIFY(b.read_response());  // both held open (keep-alive), a idle longest
        auto third = http_request(port_, "GET", "/c");
        QVERIFY(third);
        QCOMPARE(third->status, 200);
        QVERIFY(a.wait_closed());
        QVERIFY(b.send_request("GET", "/b2"));
        QVERIFY(b.read_response());
    }

    void refusesWhenEveryConnectionIsAnswered() {
        server_.reset();
        start(2);
        HttpTestClient a(port_), b(port_);
        QVERIFY(a.send_request("GET", "/wait-gone"));
        QVERIFY(b.send_request("GET", "/wait-gone"));
        QTRY_COMPARE(server_->open_connections(), 2);
        QTest::qWait(100);  // both requests reach their handlers
        auto third = http_request(port_, "GET", "/c");
        QVERIFY(third);
        QCOMPARE(third->status, 503);
        QCOMPARE(third->header("connection"), std::string("close"));
        a.close();
        b.close();
        // Closed connections free their slots.
        bool served = false;
        for (int i = 0; i < 50 && !served; ++i) {
            auto r = http_request(port_, "GET", "/d");
            served = r && r->status == 200;
            if (!served) QTest::qWait(50);
        }
        QVERIFY(served);
    }

    void noticesAClientThatLeft() {
        handler_.saw_gone = false;
        {
            HttpTestClient c(port_);
            QVERIFY(c.send_request("GET", "/wait-gone"));
            QTest::qWait(100);
        }
        QTRY_VERIFY_WITH_TIMEOUT(handler_.saw_gone.load(), 5000);
    }

    void stopsWithConnectionsOpen() {
        HttpTestClient idle(port_), busy(port_);
        QVERIFY(idle.send_request("GET", "/x"));
        QVERIFY(idle.read_response());
        QVERIFY(busy.send_request("GET", "/wait-gone"));
        QTest::qWait(100);
        const auto t0 = std::chrono::steady_clock::now();
        server_->stop();
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
        QVERIFY(idle.wait_closed());
    }

    // A handler answering when stop() comes may finish its answer (within the grace
    // period); a connection waiting for its next request is closed.
    void stopLetsAnsweringHandlersFinish() {
        HttpTestClient idle(port_), streaming(port_);
        QVERIFY(idle.send_request("GET", "/x"));
        QVERIFY(idle.read_response());
        QVERIFY(streaming.send_request("GET", "/until-stop"));
        const auto head = streaming.read_head();
        QVERIFY(head);
        QCOMPARE(head->status, 200);
        std::thread stopper([this] { server_->stop(); });
        const auto rest = streaming.read_chunked_body();
        stopper.join();
        QVERIFY(rest);
        QCOMPARE(*rest, std::string("started stopped"));
        QVERIFY(idle.wait_closed());
        QVERIFY(streaming.wait_closed());
    }
};

QTEST_GUILESS_MAIN(TestHttpServer)
#include "test_http_server.moc"
