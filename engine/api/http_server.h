// An HTTP/1.1 server on POSIX sockets: one thread accepts, each connection runs on its
// own thread (at most max_connections at once; one more is answered 503 and closed).
// Connections are kept alive between requests; bodies may use Content-Length or
// chunked encoding. Writes use MSG_NOSIGNAL, so a vanished client is a failed write,
// never a SIGPIPE.
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
// write() pieces (sent with chunked encoding) and end_stream().
class ResponseWriter {
public:
    // http10: the request was HTTP/1.0 (no chunked encoding; the connection closes).
    ResponseWriter(int fd, bool http10) : fd_(fd), http10_(http10) {}

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
    bool send_all(std::string_view data);
    std::string head(int status, const HttpHeaders& headers, const std::string& framing) const;

    int fd_;
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
    virtual void refuse(const HttpRequest& request, int status, const std::string& message, ResponseWriter& out) = 0;
};

struct HttpServerOptions {
    std::string host = "127.0.0.1";
    uint16_t port = 8080;  // 0: any free port (read it back with HttpServer::port())
    size_t max_head_bytes = 32u << 10;
    size_t max_body_bytes = 4u << 20;
    int max_connections = 64;
    std::chrono::seconds idle_timeout{60};     // keep-alive wait for the next request
    std::chrono::seconds request_timeout{30};  // to receive one whole request once it began
    std::chrono::seconds write_timeout{30};
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
    int active_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace arbor::api
