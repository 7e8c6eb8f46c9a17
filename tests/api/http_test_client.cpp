#include "http_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace arbor::test {

HttpTestClient::HttpTestClient(uint16_t port, std::chrono::seconds timeout) : timeout_(timeout) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
}

HttpTestClient::~HttpTestClient() { close(); }

void HttpTestClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

bool HttpTestClient::send_raw(std::string_view bytes) {
    while (!bytes.empty()) {
        if (fd_ < 0) return false;
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(size_t(n));
    }
    return true;
}

bool HttpTestClient::send_request(const std::string& method, const std::string& path, const std::string& body,
                                  const std::vector<std::string>& extra_headers) {
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (const auto& h : extra_headers) req += h + "\r\n";
    if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    return send_raw(req);
}

bool HttpTestClient::fill() {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(timeout_.count() * 1000)) <= 0) return false;
    char tmp[16384];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, size_t(n));
    return true;
}

std::optional<HttpResponse> HttpTestClient::read_head() {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
        if (!fill()) return std::nullopt;
    HttpResponse r;
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    size_t eol = head.find("\r\n");
    const std::string status_line = head.substr(0, eol);
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return std::nullopt;
    r.status = std::stoi(status_line.substr(9, 3));
    while (eol != std::string::npos) {
        const size_t start = eol + 2;
        eol = head.find("\r\n", start);
        const std::string line = head.substr(start, eol == std::string::npos ? std::string::npos : eol - start);
        const size_t colon = line.find(':');
        if (colon == std::string::npos) return std::nullopt;
        std::string name = line.substr(0, colon);
        for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        r.headers[name] = value;
    }
    return r;
}

std::optional<std::string> HttpTestClient::read_chunked_body() {
    std::string body;
    for (;;) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos)
            if (!fill()) return std::nullopt;
        const size_t n = std::stoul(buf_.substr(0, eol), nullptr, 16);
        while (buf_.size() < eol + 2 + n + 2)
            if (!fill()) return std::nullopt;
        if (buf_.compare(eol + 2 + n, 2, "\r\n") != 0) return std::nullopt;
        body += buf_.substr(eol + 2, n);
        buf_.erase(0, eol + 2 + n + 2);
        if (n == 0) return body;
    }
}

std::string HttpTestClient::read_some() {
    if (buf_.empty()) fill();
    std::string out;
    out.swap(buf_);
    return out;
}

std::optional<HttpResponse> HttpTestClient::read_response() {
    auto r = read_head();
    if (!r) return std::nullopt;
    if (r->status == 100) return read_response();
    if (r->status == 204 || r->status == 304) return r;
    if (r->has("content-length")) {
        const size_t n = std::stoul(r->header("content-length"));
        while (buf_.size() < n)
            if (!fill()) return std::nullopt;
        r->body = buf_.substr(0, n);
        buf_.erase(0, n);
    } else if (r->header("transfer-encoding") == "chunked") {
        auto body = read_chunked_body();
        if (!body) return std::nullopt;
        r->body = std::move(*body);
    } else {
        while (fill()) {
        }
        r->body.swap(buf_);
    }
    return r;
}

bool HttpTestClient::wait_closed() {
    while (fill()) buf_.clear();
    if (fd_ < 0) return true;
    char c;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && ::recv(fd_, &c, 1, MSG_PEEK) <= 0;
}

std::optional<HttpResponse> http_request(uint16_t port, const std::string& method, const std::string& path,
                                         const std::string& body, const std::vector<std::string>& headers) {
    HttpTestClient c(port);
    if (!c.connected() || !c.send_request(method, path, body, headers)) return std::nullopt;
    return c.read_response();
}

std::vector<std::string> sse_payloads(const std::string& body) {
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t end = body.find("\n\n", pos);
        if (end == std::string::npos) break;
        const std::string event = body.substr(pos, end - pos);
        if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
        else out.push_back("<malformed event: " + event + ">");
        pos = end + 2;
    }
    if (pos != body.size()) out.push_back("<unterminated: " + body.substr(pos) + ">");
    return out;
}

} // namespace arbor::test
