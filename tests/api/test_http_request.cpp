// The request parser without sockets (Beast's parser behind RequestParser): a request fed
// whole or one byte at a time gives the same result, pipelined requests are told apart,
// and refusals carry the status the server answers with.
#include "test_support.h"

#include "api/http_request.h"

using arbor::api::HttpRequest;
using arbor::api::RequestParser;
using arbor::api::parse_http_request;

namespace {

// Feeds `bytes` one at a time as a slow client would send them; nullopt when refused.
std::optional<HttpRequest> parse_bytewise(const std::string& bytes, size_t* used_total = nullptr) {
    RequestParser parser(arbor::api::HttpLimits{});
    std::string pending;
    size_t used_all = 0;
    for (char c : bytes) {
        pending.push_back(c);
        for (;;) {
            const size_t used = parser.feed(pending);
            pending.erase(0, used);
            used_all += used;
            if (used == 0 || parser.state() != RequestParser::State::HeadDone || pending.empty()) break;
        }
        if (parser.state() == RequestParser::State::HeadDone && pending.empty()) parser.feed({});
        if (parser.state() == RequestParser::State::Failed) return std::nullopt;
        if (parser.state() == RequestParser::State::Done) break;
    }
    if (used_total) *used_total = used_all;
    if (parser.state() != RequestParser::State::Done) return std::nullopt;
    return parser.take();
}

// What parsing gave, as text to compare: the refusal's status, "incomplete", or the
// request's length, target, headers and body.
std::string outcome(const arbor::api::ParsedRequest& r) {
    if (r.error) return "refused " + std::to_string(r.error->status);
    if (!r.request) return "incomplete";
    std::string s = "request of " + std::to_string(r.length) + " bytes: " + r.request->target;
    for (const auto& [name, value] : r.request->headers) s += "; " + name + "=" + value;
    return s + "; body " + r.request->body;
}

// Feeds `bytes` in pieces of the given sizes (the rest at once after them), keeping the
// unconsumed bytes in front of the next piece as the server does.
arbor::api::ParsedRequest parse_in_pieces(const std::string& bytes, const std::vector<size_t>& pieces) {
    RequestParser parser(arbor::api::HttpLimits{});
    arbor::api::ParsedRequest out;
    std::string pending;
    size_t pos = 0, next_piece = 0;
    for (;;) {
        const size_t used = parser.feed(pending);
        pending.erase(0, used);
        out.length += used;
        if (parser.state() == RequestParser::State::Failed) {
            out.error = parser.error();
            return out;
        }
        if (parser.state() == RequestParser::State::Done) {
            out.request = parser.take();
            return out;
        }
        if (pos == bytes.size() && used == 0) return out;
        const size_t n = next_piece < pieces.size() ? pieces[next_piece++] : bytes.size();
        pending.append(bytes, pos, std::min(n, bytes.size() - pos));
        pos += std::min(n, bytes.size() - pos);
    }
}

} // namespace

class TestHttpRequest : public QObject {
    Q_OBJECT

private slots:
    void wholeAndBytewiseAgree_data() {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("get") << QByteArray("GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Two: 2\r\n\r\n") << QByteArray();
        QTest::newRow("length") << QByteArray("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello") << QByteArray("hello");
        QTest::newRow("chunked") << QByteArray("POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n2\r\n, \r\n0\r\nT: x\r\n\r\n")
                                 << QByteArray("hello, ");
        QTest::newRow("empty lines first") << QByteArray("\r\n\r\nGET / HTTP/1.0\r\n\r\n") << QByteArray();
    }

    void wholeAndBytewiseAgree() {
        QFETCH(QByteArray, raw);
        QFETCH(QByteArray, body);
        const std::string bytes = raw.toStdString();
        const auto whole = parse_http_request(bytes);
        QVERIFY(whole.request);
        QCOMPARE(whole.length, bytes.size());
        QCOMPARE(whole.request->body, body.toStdString());
        size_t used = 0;
        const auto bytewise = parse_bytewise(bytes, &used);
        QVERIFY(bytewise);
        QCOMPARE(used, bytes.size());
        QCOMPARE(bytewise->method, whole.request->method);
        QCOMPARE(bytewise->target, whole.request->target);
        QCOMPARE(bytewise->headers, whole.request->headers);
        QCOMPARE(bytewise->body, whole.request->body);
    }

    // However the bytes are cut in three pieces, the outcome is the one of the
    // whole: a CR LF at the front of a later piece is the blank line ending the head, not
    // an empty line before a request.
    void everySplitReadsLikeTheWhole_data() {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<QString>("whole");
        // Found by fuzz_http (corpus http/blank-line-after-a-piece): read as 501 whole and
        // as incomplete in pieces of 64 and 12 bytes.
        QTest::newRow("unsupported coding, bytes after the head")
            << QByteArray("POST / HTTP/1.1\r\nHost: \r\nCon-XXXhtg: 6\r\nTransfer-Encoding: gz\r\n\r\nhelg: gz\r\n\r\nhellolo")
            << QString("refused 501");
        QTest::newRow("no body framing, bytes after the head")
            << QByteArray("POST / HTTP/1.1\r\nHost: \r\nCon-XXXhtg: 6\r\n\r\nhelg: gz\r\n\r\nhellolo")
            << QString("request of 42 bytes: /; host=; con-xxxhtg=6; body ");
        QTest::newRow("pipelined after an empty line")
            << QByteArray("GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\nGET /b HTTP/1.1\r\n\r\n")
            << QString("request of 27 bytes: /; host=x; body ");
        QTest::newRow("length")
            << QByteArray("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloGET")
            << QString("request of 53 bytes: /p; host=x; content-length=5; body hello");
    }

    void everySplitReadsLikeTheWhole() {
        QFETCH(QByteArray, raw);
        QFETCH(QString, whole);
        const std::string bytes = raw.toStdString();
        QCOMPARE(QString::fromStdString(outcome(parse_http_request(bytes))), whole);
        for (size_t a = 1; a < bytes.size(); ++a) {
            for (size_t b = 1; a + b <= bytes.size(); ++b) {
                const std::string got = outcome(parse_in_pieces(bytes, {a, b}));
                if (QString::fromStdString(got) != whole)
                    QFAIL(qPrintable(QString("pieces of %1 and %2 bytes: %3").arg(a).arg(b).arg(QString::fromStdString(got))));
            }
        }
    }

    void fieldsOfTheRequest() {
        const auto r = parse_http_request("GET /v1/models?x=y HTTP/1.0\r\nHOST: Example\r\nConnection: keep-alive\r\n\r\n");
        QVERIFY(r.request);
        QCOMPARE(r.request->method, std::string("GET"));
        QCOMPARE(r.request->path, std::string("/v1/models"));
        QCOMPARE(r.request->minor_version, 0);
        QCOMPARE(*r.request->header("host"), std::string("Example"));
        QVERIFY(r.request->keep_alive());
    }

    void pipelinedRequestsEndWhereTheyEnd() {
        const std::string first = "POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
        const auto r = parse_http_request(first + "GET /b HTTP/1.1\r\n\r\n");
        QVERIFY(r.request);
        QCOMPARE(r.length, first.size());
        QCOMPARE(r.request->body, std::string("abc"));
    }

    void incompleteIsNeitherRequestNorError() {
        const auto r = parse_http_request("POST /a HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
        QVERIFY(!r.request);
        QVERIFY(!r.error);
    }

    void refusalsCarryTheirStatus_data() {
        QTest::addColumn<QByteArray>("raw");
        QTest::addColumn<int>("status");
        QTest::newRow("HTTP/2.0") << QByteArray("GET / HTTP/2.0\r\n\r\n") << 400;
        QTest::newRow("folded") << QByteArray("GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n") << 400;
        QTest::newRow("gzip") << QByteArray("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n") << 501;
        QTest::newRow("too many fields") << QByteArray("GET / HTTP/1.1\r\n" + QByteArray("A: b\r\n").repeated(101) + "\r\n") << 431;
        // Found by fuzz_http: Beast read this whole as incomplete and in pieces as a request.
        QTest::newRow("bare LF in a field") << QByteArray("GET /health HTTP/1.1\r\nHost: localhost?\n\r\n") << 400;
        QTest::newRow("bare CR at the blank line")
            << QByteArray("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\xff" "ab") << 400;
        QTest::newRow("bare LF after the request line") << QByteArray("GET / HTTP/1.1\nHost: x\r\n\r\n") << 400;
        QTest::newRow("body limit") << QByteArray("POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n") << 413;
    }

    void refusalsCarryTheirStatus() {
        QFETCH(QByteArray, raw);
        QFETCH(int, status);
        const auto r = parse_http_request(raw.toStdString());
        QVERIFY(!r.request);
        QVERIFY(r.error);
        QCOMPARE(r.error->status, status);
        QVERIFY(!r.error->message.empty());
        QVERIFY(!parse_bytewise(raw.toStdString()));
    }
};

QTEST_GUILESS_MAIN(TestHttpRequest)
#include "test_http_request.moc"
