// An HTTP/1.1 server on Boost.Beast and Boost.Asio. One I/O thread reads every
// connection asynchronously, so a connection that is slow to send its request costs no
// thread; each phase has its deadline (head, body rate, keep-alive idle, each write).
// A complete request goes to the handler on a thread of its own (generation waits on
// the engine), or at once on the I/O thread when the handler says it answers without
// waiting (/health). Connections are kept alive between requests; bodies may use
// Content-Length or chunked encoding.
#pragma once

#include "api/http_request.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::api {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Writes the response to one request: either send() once, or begin_stream() then
// write() pieces (sent with chunked encoding) and end_stream(). A handler on a thread of
// its own waits in each call until the bytes are written (or the write failed or timed
// out); a handler the server runs at once on its I/O thread gets them sent afterwards.
class ResponseWriter {
public:
    // Where the bytes go: the connection (implemented by the server).
    class Sink {
    public:
        virtual ~Sink() = default;
        // Sends all of `bytes`; false when the connection failed.
        virtual bool write(std::string bytes) = 0;
        // True once the peer closed its side (checked without blocking).
        virtual bool peer_gone() = 0;
    };

    // http10: the request was HTTP/1.0 (no chunked encoding; the connection closes).
    ResponseWriter(Sink& sink, bool http10) : sink_(sink), http10_(http10) {}

    bool send(int status, const HttpHeaders& headers, std::string_view body);
    bool begin_stream(int status, const HttpHeaders& headers);
    bool write(std::string_view data);
    bool end_stream();

    // True once the peer closed its side or the connection failed (checked without
    // blocking, so a handler waiting on slow work can notice a client that left).
    bool client_gone();
    bool failed() const { return failed_; }
    bool started() const { return started_; }
    // The connection closes after this response (a failed write, or set by the handler).
    bool close_after() const { return close_after_ || failed_; }
    void set_close_after() { close_after_ = true; }

private:
    bool send_all(std::string data);
    std::string head(int status, const HttpHeaders& headers, const std::string& framing) const;

    Sink& sink_;
    bool http10_;
    bool started_ = false, streaming_ = false, failed_ = false, close_after_ = false;
};

class HttpHandler {
public:
    virtual ~HttpHandler() = default;
    // Must write a response through `out` (the server answers 500 if it does not).
    virtual void handle(const HttpRequest& request, ResponseWriter& out) = 0;
    // A request the server refused before it reached handle(): malformed, too large.
    // `request` holds whatever of the head could be parsed (may be empty).
    // Must not block: it runs on the server's I/O thread.
    virtual void refuse(const HttpRequest& request, int status, const std::string& message, ResponseWriter& out) = 0;
    // True when handle() answers this request without waiting on anything (no engine
    // work, no large body to parse): the server then runs it at once on its I/O thread,
    // so it is answered however many requests hold a thread.
    virtual bool answers_at_once(const HttpRequest&) const { return false; }
};

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;  // 0: any free port (read it back with HttpServer::port())
    size_t max_head_bytes = 32u << 10;
    size_t max_body_bytes = 4u << 20;
    // Open connections at most. At the limit a new connection takes the place of the one
    // that has waited longest for its next request or for the rest of its head; when
    // every connection is sending a body or being answered, a few reserve connections
    // past the limit are answered only if the handler answers their request at once
    // (/health), and refused with 503 otherwise.
    int max_connections = 1024;
    // Requests answered on threads of their own (generation) at once; one more is
    // answered 503. Requests answered at once (HttpHandler::answers_at_once) never wait.
    int max_active_requests = 64;
    // The whole request head must arrive within this time from the connection's accept or
    // from the first byte of a later request; else it is answered 408 and closed.
    std::chrono::milliseconds header_timeout{10000};
    std::chrono::milliseconds idle_timeout{60000};  // keep-alive wait for the next request
    // The body must arrive at body_min_rate bytes per second at least, with up to
    // body_grace of delay behind that pace (so a small body has body_grace in all).
    size_t body_min_rate = 16u << 10;
    std::chrono::milliseconds body_grace{10000};
    // One write to a client that does not read (a stalled stream reader) fails after this
    // long; a client that keeps reading, however slowly, is never cut off by it.
    std::chrono::milliseconds write_timeout{30000};
    // How long stop() lets handlers that are answering finish (a stream sends its last
    // event) before it closes their connections.
    std::chrono::milliseconds stop_grace{1000};
};

class HttpServer {
public:
    // The handler must outlive the server.
    HttpServer(HttpServerOptions options, HttpHandler& handler);
    ~HttpServer();  // stop()
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds and starts accepting. Throws arbor::Error when the address cannot be used.
    void start();
    // Stops accepting and closes idle connections at once; handlers still answering see
    // stopping() and get options.stop_grace to finish before their connections close.
    // Returns when every connection thread has ended.
    void stop();
    uint16_t port() const;
    bool stopping() const;
    int open_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace arbor::api
