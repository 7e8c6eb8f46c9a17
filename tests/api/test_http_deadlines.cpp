// The HTTP server's defences without a model: per-phase deadlines (head, body rate,
// keep-alive idle, a stream reader that stops reading), requests answered at once while
// every worker is busy, and 500 connections that never finish their heads not keeping
// a normal request out. Deadlines are set short here; the server's defaults are seconds.
#include "http_test_client.h"
#include "test_support.h"

#include "api/http_server.h"

#include <sys/resource.h>

#include <atomic>
#include <memory>
#include <thread>

using arbor::api::HttpRequest;
using arbor::api::HttpServer;
using arbor::api::HttpServerOptions;
using arbor::api::ResponseWriter;
using arbor::test::HttpTestClient;
using arbor::test::http_request;
using namespace std::chrono_literals;

namespace {

class LoadHandler : public arbor::api::HttpHandler {
public:
    std::atomic<int> handled{0};
    std::atomic<bool> flood_write_failed{false};
    std::atomic<long> flood_bytes{0};

    void handle(const HttpRequest& req, ResponseWriter& out) override {
        ++handled;
        if (req.path == "/flood") {
            // Writes until a write fails (the client does not read) or 256 MiB went out.
            const std::string piece(64 << 10, 'x');
            out.begin_stream(200, {});
            for (int i = 0; i < 4096; ++i) {
                if (!out.write(piece)) {
                    flood_write_failed = true;
                    return;
                }
                flood_bytes += long(piece.size());
            }
            out.end_stream();
        } else if (req.path == "/stream") {
            out.begin_stream(200, {});
            for (int i = 0; i < 20; ++i) {
                out.write("piece " + std::to_string(i) + "\n");
                std::this_thread::sleep_for(20ms);
            }
            out.end_stream();
        } else if (req.path == "/wait-gone") {
            for (int i = 0; i < 1000 && !out.client_gone(); ++i) std::this_thread::sleep_for(10ms);
            out.send(200, {}, "late");
        } else {
            out.send(200, {}, "ok " + req.path);
        }
    }
    void refuse(const HttpRequest&, int status, const std::string& message, ResponseWriter& out) override {
        out.send(status, {}, message);
    }
    bool answers_at_once(const HttpRequest& req) const override { return req.path == "/health"; }
};

// The soft limit on open files raised to what a test with `sockets` connections needs
// (both ends live in this process); false when the hard limit does not allow it.
bool allow_open_files(rlim_t sockets) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return false;
    const rlim_t wanted = 2 * sockets + 256;
    if (rl.rlim_cur >= wanted) return true;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < wanted) return false;
    rl.rlim_cur = wanted;
    return ::setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

} // namespace

class TestHttpDeadlines : public QObject {
    Q_OBJECT
    LoadHandler handler_;
    std::unique_ptr<HttpServer> server_;
    uint16_t port_ = 0;

    void start(HttpServerOptions o) {
        o.port = 0;
        server_ = std::make_unique<HttpServer>(o, handler_);
        server_->start();
        port_ = server_->port();
    }

private slots:
    void init() { handler_.handled = 0; }
    void cleanup() { server_.reset(); }

    // A head that does not arrive in time is answered 408 and the connection closed: one
    // sent in half, and one never begun.
    void headDeadline() {
        HttpServerOptions o;
        o.header_timeout = 300ms;
        start(o);
        HttpTestClient half(port_, 10s), silent(port_, 10s);
        QVERIFY(half.send_raw("GET /x HTTP/1.1\r\nHost: localhost\r\n"));
        const auto t0 = std::chrono::steady_clock::now();
        for (HttpTestClient* c : {&half, &silent}) {
            const auto timed_out = c->read_response();
            QVERIFY(timed_out);
            QCOMPARE(timed_out->status, 408);
            QCOMPARE(timed_out->header("connection"), std::string("close"));
            QVERIFY(c->wait_closed());
        }
        qInfo("half a head closed after %lld ms (deadline 300 ms)",
              (long long)std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
        QCOMPARE(handler_.handled.load(), 0);
        // A head sent in pieces within the deadline is served.
        HttpTestClient slow(port_, 10s);
        QVERIFY(slow.send_raw("GET /y HTTP/1.1\r\n"));
        QTest::qWait(100);
        QVERIFY(slow.send_raw("Host: localhost\r\n\r\n"));
        const auto r = slow.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->body, std::string("ok /y"));
    }

    // A body that falls behind the rate floor by more than the grace closes the
    // connection; the handler never sees the request.
    void bodyRateFloor() {
        HttpServerOptions o;
        o.body_grace = 300ms;
        o.body_min_rate = 1000;
        start(o);
        HttpTestClient c(port_, 10s);
        QVERIFY(c.send_raw("POST /b HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n0123456789"));
        QVERIFY(c.wait_closed());
        QCOMPARE(handler_.handled.load(), 0);
        // A body that keeps the pace is received whole.
        HttpTestClient paced(port_, 10s);
        QVERIFY(paced.send_raw("POST /p HTTP/1.1\r\nHost: localhost\r\nContent-Length: 400\r\n\r\n"));
        for (int i = 0; i < 4; ++i) {
            QTest::qWait(100);
            QVERIFY(paced.send_raw(std::string(100, 'b')));
        }
        const auto r = paced.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
    }

    void idleKeepAliveDeadline() {
        HttpServerOptions o;
        o.idle_timeout = 300ms;
        start(o);
        HttpTestClient c(port_, 10s);
        QVERIFY(c.send_request("GET", "/x"));
        QVERIFY(c.read_response());
        QVERIFY(c.wait_closed());
        QTRY_COMPARE(server_->open_connections(), 0);
    }

    // A stream whose reader stops reading fails its writes after the write timeout (the
    // handler sees it and stops); a stream read at the same time is not disturbed.
    void stalledReaderIsCutOffOthersAreNot() {
        HttpServerOptions o;
        o.write_timeout = 500ms;
        start(o);
        HttpTestClient stalled(port_, 10s);
        QVERIFY(stalled.send_request("GET", "/flood"));
        HttpTestClient healthy(port_, 10s);
        QVERIFY(healthy.send_request("GET", "/stream"));
        const auto r = healthy.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->body.find("piece 19\n") != std::string::npos);
        QTRY_VERIFY_WITH_TIMEOUT(handler_.flood_write_failed.load(), 10000);
        QVERIFY(handler_.flood_bytes.load() < 4096L * (64 << 10));
    }

    // With every worker busy a generating request is refused with 503, while a request
    // the handler answers at once still gets its answer.
    void answersAtOnceWhileWorkersAreBusy() {
        HttpServerOptions o;
        o.max_active_requests = 1;
        start(o);
        HttpTestClient busy(port_, 10s);
        QVERIFY(busy.send_request("GET", "/wait-gone"));
        QTRY_COMPARE(handler_.handled.load(), 1);
        const auto refused = http_request(port_, "GET", "/x");
        QVERIFY(refused);
        QCOMPARE(refused->status, 503);
        for (int i = 0; i < 10; ++i) {
            const auto health = http_request(port_, "GET", "/health");
            QVERIFY(health);
            QCOMPARE(health->status, 200);
        }
    }

    // With every connection sending a body or being answered, /health still gets its
    // answer on a reserve connection, while any other request there is refused with 503.
    void healthWhileEveryConnectionIsBusy() {
        HttpServerOptions o;
        o.max_connections = 2;
        start(o);
        HttpTestClient sending(port_, 10s), answered(port_, 10s);
        QVERIFY(sending.send_raw("POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\npart"));
        QVERIFY(answered.send_request("GET", "/wait-gone"));
        QTRY_COMPARE(handler_.handled.load(), 1);
        QCOMPARE(server_->open_connections(), 2);
        for (int i = 0; i < 10; ++i) {
            const auto health = http_request(port_, "GET", "/health");
            QVERIFY(health);
            QCOMPARE(health->status, 200);
        }
        const auto refused = http_request(port_, "GET", "/x");
        QVERIFY(refused);
        QCOMPARE(refused->status, 503);
        QCOMPARE(handler_.handled.load(), 1 + 10);  // the refused request never reached it
        // Both busy connections are still served to the end.
        QVERIFY(sending.send_raw(std::string(96, 'b')));
        const auto uploaded = sending.read_response();
        QVERIFY(uploaded);
        QCOMPARE(uploaded->body, std::string("ok /upload"));
    }

    // 500 connections that send half a head and then nothing (an attacker's), then a
    // normal request: it is served, with the default limit (the 500 stay open) and with
    // a limit below 500 (the oldest of them are closed to make room).
    void manySlowHeadsDoNotLockOut_data() {
        QTest::addColumn<int>("max_connections");
        QTest::newRow("default limit") << HttpServerOptions{}.max_connections;
        QTest::newRow("limit 100") << 100;
    }

    void manySlowHeadsDoNotLockOut() {
        QFETCH(int, max_connections);
        constexpr int kSlow = 500;
        if (!allow_open_files(kSlow + 16)) QSKIP("the open-file limit does not allow 500 connections in one process");
        HttpServerOptions o;
        o.max_connections = max_connections;
        start(o);
        std::vector<std::unique_ptr<HttpTestClient>> slow;
        for (int i = 0; i < kSlow; ++i) {
            slow.push_back(std::make_unique<HttpTestClient>(port_, 10s));
            QVERIFY(slow.back()->connected());
            QVERIFY(slow.back()->send_raw("GET / HTTP/1.1\r\nHost: loc"));
        }
        QTRY_COMPARE(server_->open_connections(), std::min(kSlow, max_connections));
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = http_request(port_, "GET", "/normal");
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->body, std::string("ok /normal"));
        qInfo("a normal request behind %d slow heads took %lld ms", kSlow, (long long)ms);
        QVERIFY2(ms < 5000, "served, but not within the liveness bound of 5 s");
        QCOMPARE(handler_.handled.load(), 1);
    }
};

QTEST_GUILESS_MAIN(TestHttpDeadlines)
#include "test_http_deadlines.moc"
