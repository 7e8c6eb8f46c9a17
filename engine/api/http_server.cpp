// HttpServer on Boost.Asio: one I/O thread runs the acceptor and every connection's
// reads and writes; handlers that wait (generation) run on threads of their own and hand
// their bytes to the I/O thread. Invariant: a connection's socket is only touched on the
// I/O thread, except that the thread answering its request peeks at it (peer_gone), and
// it is never closed while that thread runs (stop() shuts it down instead), so the
// descriptor cannot be reused under the answering thread.
#include "api/http_server.h"

#include "api/warning_limiter.h"
#include "arbor/error.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <spdlog/spdlog.h>

#include <sys/resource.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <future>
#include <list>
#include <mutex>
#include <thread>

namespace arbor::api {
namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

class Connection;
using ConnectionList = std::list<std::shared_ptr<Connection>>;

// Threads answering one request each; joined when they end (at the next spawn) or by stop.
class Workers {
public:
    // Runs fn on a new thread unless stopped (then false). The count includes it until fn returns.
    bool spawn(std::function<void()> fn) {
        std::lock_guard lock(mutex_);
        if (stopped_) return false;
        reap_locked();
        auto& w = list_.emplace_back();
        ++busy_;
        w.thread = std::thread([this, &w, fn = std::move(fn)] {
            fn();
            --busy_;
            w.done = true;
        });
        return true;
    }
    int busy() const { return busy_; }
    // No spawn succeeds from now on.
    void stop() {
        std::lock_guard lock(mutex_);
        stopped_ = true;
    }
    void join_all() {
        std::list<Worker> all;
        {
            std::lock_guard lock(mutex_);
            all.splice(all.end(), list_);
        }
        for (auto& w : all) w.thread.join();
    }

private:
    struct Worker {
        std::thread thread;
        std::atomic<bool> done{false};
    };
    void reap_locked() {
        for (auto it = list_.begin(); it != list_.end();) {
            if (it->done) {
                it->thread.join();
                it = list_.erase(it);
            } else {
                ++it;
            }
        }
    }
    std::mutex mutex_;
    std::list<Worker> list_;  // guarded by mutex_
    std::atomic<int> busy_{0};
    bool stopped_ = false;
};

// What a connection needs of the server.
struct ServerContext {
    const HttpServerOptions& options;
    HttpHandler& handler;
    net::io_context& io;
    Workers& workers;
    WarningLimiter& warnings;
    const std::atomic<bool>& stopping;
    ConnectionList& connections;  // I/O thread only
    std::atomic<int>& open_count;
};

class Connection final : public std::enable_shared_from_this<Connection>, public ResponseWriter::Sink {
public:
    // Idle: waiting for a later request to begin; Head, Body: receiving a request;
    // Answering: its handler runs; Closing: a refusal is being sent.
    enum class Phase { Idle, Head, Body, Answering, Closing };

    Connection(ServerContext& server, tcp::socket socket)
        : s_(server), stream_(std::move(socket)), fd_(stream_.socket().native_handle()), head_timer_(server.io) {}

    Phase phase() const { return phase_; }
    Clock::time_point since() const { return since_; }
    void set_position(ConnectionList::iterator it) { position_ = it; }

    // A new connection: its head must arrive within the header timeout from now. A
    // reserve connection (one past the limit) is answered only when the handler answers
    // its request at once (/health), else refused with 503; it closes after one answer.
    void start(bool reserve) {
        ++s_.open_count;
        reserve_ = reserve;
        new_request(Phase::Head);
    }

    void close() {
        if (closed_) return;
        closed_ = true;
        head_timer_.cancel();
        const auto self = shared_from_this();  // erasing it from the list below may drop the last other owner
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        stream_.close();
        --s_.open_count;
        s_.connections.erase(position_);
    }

    // stop(): ends the connection of a handler that did not finish in time; its writes
    // fail and it sees the client gone.
    void cut_off() {
        beast::error_code ec;
        stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    }

    // ---- ResponseWriter::Sink, called by the handler ----
    bool write(std::string bytes) override {
        if (answering_here_) {
            pending_ += bytes;
            return true;
        }
        std::promise<bool> written;
        auto done = written.get_future();
        net::post(s_.io, [self = shared_from_this(), &bytes, &written] {
            self->stream_.expires_after(self->s_.options.write_timeout);
            net::async_write(self->stream_, net::buffer(bytes), [self, &written](beast::error_code ec, size_t) {
                self->stream_.expires_never();
                written.set_value(!ec);
            });
        });
        try {
            return done.get();
        } catch (const std::future_error&) {
            return false;  // the I/O thread dropped the write
        }
    }

    bool peer_gone() override {
        if (answering_here_) return false;
        char c;
        const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }

private:
    void new_request(Phase phase) {
        phase_ = phase;
        since_ = Clock::now();
        HttpLimits limits;
        limits.max_head_bytes = s_.options.max_head_bytes;
        limits.max_body_bytes = s_.options.max_body_bytes;
        parser_ = std::make_unique<RequestParser>(limits);
        if (!in_.empty()) phase_ = Phase::Head;  // a pipelined request has begun
        if (phase_ == Phase::Head) {
            start_head_deadline();
        } else {
            head_timer_.cancel();
            stream_.expires_after(s_.options.idle_timeout);
        }
        if (!in_.empty()) return parse();
        read();
    }

    void read() {
        stream_.async_read_some(net::buffer(chunk_), [self = shared_from_this()](beast::error_code ec, size_t n) {
            self->on_read(ec, n);
        });
    }

    void on_read(beast::error_code ec, size_t n) {
        if (closed_) return;
        if (head_timed_out_ && phase_ == Phase::Head && !s_.stopping)
            return refuse(parser_->request(), {408, "the request head did not arrive in time"});
        if (ec) return close();  // the peer left, a deadline passed, or stop()
        in_.append(chunk_.data(), n);
        if (phase_ == Phase::Idle) {
            phase_ = Phase::Head;
            since_ = Clock::now();
            start_head_deadline();
        }
        parse();
    }

    // The head deadline has a timer of its own rather than the stream's (which closes the
    // socket when it passes), so that a late head is answered 408 before the close: the
    // timer cancels the read, and on_read sends the 408.
    void start_head_deadline() {
        stream_.expires_never();
        head_timed_out_ = false;
        head_timer_.expires_after(s_.options.header_timeout);
        head_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
            if (ec || self->closed_ || self->phase_ != Phase::Head) return;
            self->head_timed_out_ = true;
            beast::error_code ignored;
            self->stream_.socket().cancel(ignored);
        });
    }

    void parse() {
        for (;;) {
            in_.erase(0, parser_->feed(in_));
            switch (parser_->state()) {
            case RequestParser::State::Failed: return refuse(parser_->request(), parser_->error());
            case RequestParser::State::Done: return dispatch(parser_->take());
            case RequestParser::State::HeadDone:
                if (phase_ != Phase::Body) {
                    phase_ = Phase::Body;
                    head_timer_.cancel();
                    body_start_ = Clock::now();
                    set_body_deadline();
                    if (const std::string* expect = parser_->request().header("expect")) {
                        if (ascii_lower(*expect) != "100-continue")
                            return refuse(parser_->request(), {417, "unsupported Expect header"});
                        return send_continue();
                    }
                    continue;  // body bytes may be here already
                }
                set_body_deadline();
                return read();
            case RequestParser::State::NeedMore: return read();
            }
        }
    }

    // The body must keep up with the rate floor, body_grace behind it at most.
    void set_body_deadline() {
        const auto allowed = std::chrono::microseconds(int64_t(double(parser_->body_bytes()) * 1e6 /
                                                               double(std::max<size_t>(s_.options.body_min_rate, 1))));
        stream_.expires_at(body_start_ + s_.options.body_grace + allowed);
    }

    void send_continue() {
        static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec || self->closed_) return self->close();
            self->parse();
        });
    }

    void dispatch(HttpRequest request) {
        if (s_.stopping) return close();
        phase_ = Phase::Answering;
        head_timer_.cancel();
        stream_.expires_never();
        auto req = std::make_shared<HttpRequest>(std::move(request));
        if (s_.handler.answers_at_once(*req)) {
            answering_here_ = true;
            const bool close_after = answer(*req) || reserve_;
            answering_here_ = false;
            return flush_pending([close_after](Connection& c) { c.answered(close_after); });
        }
        if (reserve_) {
            s_.warnings.warn("full", "api: all " + std::to_string(s_.options.max_connections) +
                                         " connections are receiving or answering requests; refused one with 503");
            return refuse(*req, {503, "the server has too many open connections; try again later"});
        }
        if (s_.workers.busy() >= s_.options.max_active_requests) {
            s_.warnings.warn("busy", "api: " + std::to_string(s_.options.max_active_requests) +
                                         " requests are being answered; refused one more with 503");
            return refuse(*req, {503, "the server is answering too many requests; try again later"});
        }
        const bool spawned = s_.workers.spawn([self = shared_from_this(), req] {
            const bool close_after = self->answer(*req);
            net::post(self->s_.io, [self, close_after] { self->answered(close_after); });
        });
        if (!spawned) close();  // stop() began
    }

    // Runs the handler; returns whether the connection closes after the answer.
    bool answer(const HttpRequest& req) {
        ResponseWriter out(*this, req.minor_version == 0);
        if (!req.keep_alive()) out.set_close_after();
        try {
            s_.handler.handle(req, out);
        } catch (const std::exception& e) {
            spdlog::error("api: handler failed on {} {}: {}", req.method, req.path, e.what());
            if (!out.started()) s_.handler.refuse(req, 500, "internal error", out);
            out.set_close_after();
        }
        if (!out.started()) {
            // A handler may give up without answering a client that already left.
            if (!out.client_gone()) s_.handler.refuse(req, 500, "no response was produced", out);
            out.set_close_after();
        }
        return out.close_after();
    }

    void answered(bool close_after) {
        if (closed_) return;
        if (close_after || s_.stopping) return close();
        new_request(Phase::Idle);
    }

    // Writes what a handler on the I/O thread produced, then runs next.
    void flush_pending(std::function<void(Connection&)> next) {
        auto bytes = std::make_shared<std::string>(std::move(pending_));
        pending_.clear();
        stream_.expires_after(s_.options.write_timeout);
        net::async_write(stream_, net::buffer(*bytes),
                         [self = shared_from_this(), bytes, next = std::move(next)](beast::error_code ec, size_t) {
                             self->stream_.expires_never();
                             if (ec) return self->close();
                             next(*self);
                         });
    }

    // Answers a request that will not reach the handler, then lets the client read it
    // before the close: what it still sends is read and dropped for a moment.
    void refuse(const HttpRequest& req, const HttpParseError& error) {
        phase_ = Phase::Closing;
        head_timer_.cancel();
        answering_here_ = true;
        ResponseWriter out(*this, false);
        out.set_close_after();
        s_.handler.refuse(req, error.status, error.message, out);
        answering_here_ = false;
        flush_pending([](Connection& c) {
            beast::error_code ec;
            c.stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
            c.stream_.expires_after(std::chrono::milliseconds(500));
            c.drain();
        });
    }

    void drain() {
        stream_.async_read_some(net::buffer(chunk_), [self = shared_from_this()](beast::error_code ec, size_t) {
            if (ec || self->closed_) return self->close();
            self->drain();
        });
    }

    ServerContext& s_;
    beast::tcp_stream stream_;
    const int fd_;  // for peer_gone() from the answering thread
    ConnectionList::iterator position_;
    net::steady_timer head_timer_;
    bool head_timed_out_ = false;
    bool reserve_ = false;
    Phase phase_ = Phase::Head;
    Clock::time_point since_ = Clock::now();
    Clock::time_point body_start_;
    std::unique_ptr<RequestParser> parser_;
    std::string in_;  // received, not yet parsed
    std::array<char, 16384> chunk_;
    bool answering_here_ = false;  // the handler runs on the I/O thread: writes go to pending_
    std::string pending_;
    bool closed_ = false;
};

// Lets the process hold max_connections sockets (and some files besides).
void raise_open_file_limit(int max_connections) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    const rlim_t wanted = rlim_t(max_connections) + 256;
    if (rl.rlim_cur >= wanted || rl.rlim_cur == RLIM_INFINITY) return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, rl.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &rl);
}

} // namespace

// Connections past max_connections that may still ask for /health.
constexpr int kReserveConnections = 64;

struct HttpServer::Impl {
    HttpServerOptions options;
    HttpHandler& handler;
    net::io_context io{1};
    tcp::acceptor acceptor{io};
    net::steady_timer accept_retry{io};
    net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
    std::thread io_thread;
    uint16_t bound_port = 0;
    std::atomic<bool> stopping{false};
    std::atomic<int> open_count{0};
    Workers workers;
    WarningLimiter warnings;
    ConnectionList connections;  // I/O thread only
    ServerContext context{options, handler, io, workers, warnings, stopping, connections, open_count};

    Impl(HttpServerOptions o, HttpHandler& h) : options(std::move(o)), handler(h) {}

    void bind_and_listen() {
        beast::error_code ec;
        tcp::resolver resolver(io);
        const auto endpoints = resolver.resolve(options.host, std::to_string(options.port),
                                                tcp::resolver::passive | tcp::resolver::numeric_service, ec);
        if (ec) throw Error("cannot resolve host '" + options.host + "': " + ec.message());
        std::string last_error = "no address";
        for (const auto& entry : endpoints) {
            acceptor.open(entry.endpoint().protocol(), ec);
            if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
            if (!ec) acceptor.bind(entry.endpoint(), ec);
            if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
            if (!ec) break;
            last_error = ec.message();
            beast::error_code ignored;
            acceptor.close(ignored);
        }
        if (!acceptor.is_open())
            throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + last_error);
        bound_port = acceptor.local_endpoint().port();
    }

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
            if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
            if (!ec) {
                admit(std::move(socket));
                return accept();
            }
            // Out of descriptors or memory: the connection waits in the backlog, so an
            // immediate retry would spin; try again a little later.
            warnings.warn("accept", "api: cannot accept a connection: " + ec.message());
            accept_retry.expires_after(std::chrono::milliseconds(100));
            accept_retry.async_wait([this](beast::error_code wait_ec) {
                if (!wait_ec) accept();
            });
        });
    }

    void admit(tcp::socket socket) {
        beast::error_code ec;
        socket.set_option(tcp::no_delay(true), ec);
        if (int(connections.size()) >= options.max_connections) evict_one();
        // Past the limit (every connection is sending a body or being answered) a few
        // reserve connections still read their heads, so /health is answered; beyond
        // those the socket is just closed.
        if (int(connections.size()) >= options.max_connections + kReserveConnections) {
            warnings.warn("full", "api: all " + std::to_string(options.max_connections) +
                                      " connections and the reserve are in use; closed a new one");
            return;
        }
        auto c = add(std::move(socket));
        c->start(/*reserve=*/int(connections.size()) > options.max_connections);
    }

    std::shared_ptr<Connection> add(tcp::socket socket) {
        auto c = std::make_shared<Connection>(context, std::move(socket));
        connections.push_back(c);
        c->set_position(std::prev(connections.end()));
        return c;
    }

    // Closes the connection that has waited longest for a request or its head, if any.
    bool evict_one() {
        std::shared_ptr<Connection> oldest;
        for (const auto& c : connections) {
            const auto phase = c->phase();
            if (phase != Connection::Phase::Idle && phase != Connection::Phase::Head) continue;
            if (!oldest || c->since() < oldest->since()) oldest = c;
        }
        if (!oldest) return false;
        warnings.warn("evict", "api: at the limit of " + std::to_string(options.max_connections) +
                                   " connections; closed the one waiting longest for a request");
        oldest->close();
        return true;
    }

    // Runs fn on the I/O thread and waits for it.
    void on_io_thread(std::function<void()> fn) {
        std::promise<void> done;
        net::post(io, [&] {
            fn();
            done.set_value();
        });
        done.get_future().wait();
    }

    void stop() {
        workers.stop();
        on_io_thread([this] {
            beast::error_code ec;
            acceptor.close(ec);
            accept_retry.cancel();
            // Connections waiting for a request close now; answering ones finish first.
            for (auto it = connections.begin(); it != connections.end();) {
                auto c = *it++;  // close() erases c from the list
                if (c->phase() != Connection::Phase::Answering) c->close();
            }
        });
        // Handlers see stopping() and end their answers (a stream its last event); what
        // still runs after the grace period (a handler that ignores stopping, a client that
        // does not read) is cut off.
        const auto grace_end = Clock::now() + options.stop_grace;
        while (workers.busy() > 0 && Clock::now() < grace_end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (workers.busy() > 0)
            on_io_thread([this] {
                for (const auto& c : connections)
                    if (c->phase() == Connection::Phase::Answering) c->cut_off();
            });
        workers.join_all();
        on_io_thread([this] {
            while (!connections.empty()) connections.front()->close();
        });
        work.reset();
        io_thread.join();
    }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
    if (impl_->acceptor.is_open() || impl_->stopping) return;
    raise_open_file_limit(impl_->options.max_connections);
    impl_->bind_and_listen();
    impl_->accept();
    impl_->io_thread = std::thread([this] { impl_->io.run(); });
}

void HttpServer::stop() {
    if (impl_->stopping.exchange(true)) return;
    if (!impl_->io_thread.joinable()) return;
    impl_->stop();
}

uint16_t HttpServer::port() const { return impl_->bound_port; }

bool HttpServer::stopping() const { return impl_->stopping; }

int HttpServer::open_connections() const { return impl_->open_count; }

} // namespace arbor::api
