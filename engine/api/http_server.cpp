#include "api/http_server.h"

#include "arbor/error.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

namespace arbor::api {

// ---- ResponseWriter ----

std::string ResponseWriter::head(int status, const HttpHeaders& headers, const std::string& framing) const {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) + "\r\n";
    for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
    h += framing;
    if (close_after_ || http10_) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

bool ResponseWriter::send_all(std::string_view data) {
    while (!data.empty() && !failed_) {
        const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(size_t(n));
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            failed_ = true;  // EPIPE, ECONNRESET, or the send timeout
        }
    }
    return !failed_;
}

bool ResponseWriter::send(int status, const HttpHeaders& headers, std::string_view body) {
    if (started_) return false;
    started_ = true;
    std::string out = head(status, headers, "Content-Length: " + std::to_string(body.size()) + "\r\n");
    out.append(body);
    return send_all(out);
}

bool ResponseWriter::begin_stream(int status, const HttpHeaders& headers) {
    if (started_) return false;
    started_ = streaming_ = true;
    // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
    if (http10_) close_after_ = true;
    return send_all(head(status, headers, http10_ ? "" : "Transfer-Encoding: chunked\r\n"));
}

bool ResponseWriter::write(std::string_view data) {
    if (!streaming_ || data.empty()) return !failed_;
    if (http10_) return send_all(data);
    char size[20];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk(size, size_t(n));
    chunk.append(data);
    chunk += "\r\n";
    return send_all(chunk);
}

bool ResponseWriter::end_stream() {
    if (!streaming_) return !failed_;
    streaming_ = false;
    return http10_ ? !failed_ : send_all("0\r\n\r\n");
}

bool ResponseWriter::client_gone() {
    if (failed_) return true;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) failed_ = true;
    return failed_;
}

// ---- HttpServer ----

struct HttpServer::Impl {
    HttpServerOptions options;
    HttpHandler& handler;
    int listen_fd = -1;
    int wake_pipe[2] = {-1, -1};
    uint16_t bound_port = 0;
    std::atomic<bool> stopping{false};
    std::thread acceptor;

    struct Connection {
        int fd = -1;
        std::thread thread;
        std::atomic<bool> done{false};
    };
    mutable std::mutex mutex;
    std::list<Connection> connections;  // guarded by mutex

    Impl(HttpServerOptions o, HttpHandler& h) : options(std::move(o)), handler(h) {}

    void bind_and_listen() {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        addrinfo* res = nullptr;
        const std::string port = std::to_string(options.port);
        if (int rc = getaddrinfo(options.host.empty() ? nullptr : options.host.c_str(), port.c_str(), &hints, &res); rc != 0)
            throw Error("cannot resolve host '" + options.host + "': " + gai_strerror(rc));
        std::string last_error = "no address";
        for (addrinfo* ai = res; ai; ai = ai->ai_next) {
            const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0) {
                last_error = std::strerror(errno);
                continue;
            }
            const int one = 1;
            ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
            if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
                listen_fd = fd;
                break;
            }
            last_error = std::strerror(errno);
            ::close(fd);
        }
        freeaddrinfo(res);
        if (listen_fd < 0) throw Error("cannot listen on " + options.host + ":" + port + ": " + last_error);
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
        bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
        if (::pipe2(wake_pipe, O_CLOEXEC) != 0) throw Error("cannot create a pipe: " + std::string(std::strerror(errno)));
    }

    void reap_finished() {
        std::lock_guard lock(mutex);
        for (auto it = connections.begin(); it != connections.end();) {
            if (it->done) {
                it->thread.join();
                it = connections.erase(it);
            } else {
                ++it;
            }
        }
    }

    void accept_loop() {
        while (!stopping) {
            pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
            if (::poll(fds, 2, 1000) < 0 && errno != EINTR) break;
            reap_finished();
            if (stopping) break;
            if (!(fds[0].revents & POLLIN)) continue;
            const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            timeval tv{long(options.write_timeout.count()), 0};
            ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
            std::lock_guard lock(mutex);
            if (int(connections.size()) >= options.max_connections) {
                refuse_busy(fd);
                continue;
            }
            auto& c = connections.emplace_back();
            c.fd = fd;
            c.thread = std::thread([this, &c] {
                serve(c.fd);
                // Closed under the lock, so stop() never shuts down a reused descriptor.
                std::lock_guard l(mutex);
                ::shutdown(c.fd, SHUT_RDWR);
                ::close(c.fd);
                c.fd = -1;
                c.done = true;
            });
        }
    }

    void refuse_busy(int fd) {
        ResponseWriter out(fd, false);
        out.set_close_after();
        handler.refuse(HttpRequest{}, 503, "the server has too many open connections; try again later", out);
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
    }

    // Reads more bytes into buf, waiting at most until deadline. False on EOF, error,
    // timeout or shutdown.
    bool read_more(int fd, std::string& buf, std::chrono::steady_clock::time_point deadline) {
        for (;;) {
            if (stopping) return false;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            // stop() writes to the wake pipe and nobody drains it: it wakes every reader.
            pollfd p[2] = {{fd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
            const int rc = ::poll(p, 2, int(std::min<int64_t>(left.count(), 500)));
            if (rc < 0 && errno != EINTR) return false;
            if (rc <= 0 || !(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char tmp[16384];
            const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
            if (n > 0) {
                buf.append(tmp, size_t(n));
                return true;
            }
            if (n == 0 || (errno != EINTR && errno != EAGAIN)) return false;
        }
    }

    void serve(int fd) {
        std::string buf;
        using Clock = std::chrono::steady_clock;
        for (;;) {
            HttpRequest req;
            // Waiting for a request to begin uses the idle timeout, finishing it the request timeout.
            auto deadline = Clock::now() + options.idle_timeout;
            bool begun = !buf.empty();
            if (begun) deadline = Clock::now() + options.request_timeout;
            HeadResult head;
            for (;;) {
                head = parse_request_head(buf, options.max_head_bytes, req);
                if (head.state != HeadResult::State::Incomplete) break;
                if (!read_more(fd, buf, deadline)) return;
                if (!begun) {
                    begun = true;
                    deadline = Clock::now() + options.request_timeout;
                }
            }
            if (head.state == HeadResult::State::Failed) return refuse(fd, req, head.error);
            buf.erase(0, head.length);
            BodyFraming framing;
            if (auto err = body_framing(req, framing)) return refuse(fd, req, *err);
            if (!framing.chunked && framing.length > options.max_body_bytes)
                return refuse(fd, req, {413, "the request body is larger than " + std::to_string(options.max_body_bytes) + " bytes"});
            if (const std::string* expect = req.header("expect")) {
                if (*expect == "100-continue" || *expect == "100-Continue") {
                    if (::send(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL) != 25) return;
                } else {
                    return refuse(fd, req, {417, "unsupported Expect header"});
                }
            }
            if (framing.chunked) {
                ChunkedDecoder decoder(options.max_body_bytes);
                for (;;) {
                    const auto st = decoder.feed(buf, req.body);
                    if (st == ChunkedDecoder::State::Done) break;
                    if (st == ChunkedDecoder::State::Failed) return refuse(fd, req, decoder.error());
                    if (!read_more(fd, buf, deadline)) return;
                }
            } else {
                while (buf.size() < framing.length)
                    if (!read_more(fd, buf, deadline)) return;
                req.body = buf.substr(0, size_t(framing.length));
                buf.erase(0, size_t(framing.length));
            }
            ResponseWriter out(fd, req.minor_version == 0);
            if (!req.keep_alive()) out.set_close_after();
            try {
                handler.handle(req, out);
            } catch (const std::exception& e) {
                spdlog::error("api: handler failed on {} {}: {}", req.method, req.path, e.what());
                if (!out.started()) handler.refuse(req, 500, "internal error", out);
                out.set_close_after();
            }
            if (!out.started()) {
                // A handler may give up without answering a client that already left.
                if (!out.client_gone()) handler.refuse(req, 500, "no response was produced", out);
                out.set_close_after();
            }
            if (out.close_after() || stopping) return;
        }
    }

    void refuse(int fd, const HttpRequest& req, const HttpParseError& err) {
        ResponseWriter out(fd, false);
        out.set_close_after();
        handler.refuse(req, err.status, err.message, out);
        // Let the client read the answer before the close: drop what it still sends.
        ::shutdown(fd, SHUT_WR);
        char tmp[4096];
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
        while (std::chrono::steady_clock::now() < until) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            if (::recv(fd, tmp, sizeof tmp, 0) <= 0) break;
        }
    }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
    if (impl_->listen_fd >= 0) return;
    impl_->bind_and_listen();
    impl_->acceptor = std::thread([this] { impl_->accept_loop(); });
}

void HttpServer::stop() {
    if (impl_->stopping.exchange(true)) return;
    if (impl_->wake_pipe[1] >= 0) {
        const char c = 'x';
        [[maybe_unused]] auto n = ::write(impl_->wake_pipe[1], &c, 1);
    }
    if (impl_->acceptor.joinable()) impl_->acceptor.join();
    // Connections waiting for a request were woken by the pipe and close; handlers see
    // `stopping` and finish their answers. Whatever still runs after the grace period
    // (a handler that ignores `stopping`, a client that does not read) is cut off.
    const auto grace_end = std::chrono::steady_clock::now() + impl_->options.stop_grace;
    bool cut_off = false;
    for (;;) {
        impl_->reap_finished();
        {
            std::lock_guard lock(impl_->mutex);
            if (impl_->connections.empty()) break;
            if (!cut_off && std::chrono::steady_clock::now() >= grace_end) {
                for (auto& c : impl_->connections)
                    if (c.fd >= 0) ::shutdown(c.fd, SHUT_RDWR);
                cut_off = true;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (int* fd : {&impl_->listen_fd, &impl_->wake_pipe[0], &impl_->wake_pipe[1]})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

bool HttpServer::stopping() const { return impl_->stopping; }

int HttpServer::active_connections() const {
    std::lock_guard lock(impl_->mutex);
    int n = 0;
    for (const auto& c : impl_->connections) n += c.done ? 0 : 1;
    return n;
}

} // namespace arbor::api
