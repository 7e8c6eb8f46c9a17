// A small blocking HTTP/1.1 client over loopback for the API tests: raw bytes in,
// parsed responses (Content-Length, chunked, or read to the close) out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbor::test {

struct HttpResponse {
    int status = 0;
    std::map<std::string, std::string> headers;  // lowercase names
    std::string body;                            // de-chunked
    bool has(const std::string& name) const { return headers.count(name) != 0; }
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

class HttpTestClient {
public:
    explicit HttpTestClient(uint16_t port, std::chrono::seconds timeout = std::chrono::seconds(120));
    ~HttpTestClient();
    HttpTestClient(const HttpTestClient&) = delete;
    HttpTestClient& operator=(const HttpTestClient&) = delete;

    bool connected() const { return fd_ >= 0; }
    bool send_raw(std::string_view bytes);
    // Adds Host and Content-Length (when a body is given).
    bool send_request(const std::string& method, const std::string& path, const std::string& body = {},
                      const std::vector<std::string>& extra_headers = {});
    // The next whole response; nullopt on timeout, close before it completed, or bad framing.
    std::optional<HttpResponse> read_response();
    // The status line and headers only; then read_some() returns raw body bytes.
    std::optional<HttpResponse> read_head();
    std::string read_some();
    // After read_head() of a chunked response: the rest of its body, de-chunked; nullopt
    // when the connection ends before the last chunk.
    std::optional<std::string> read_chunked_body();
    // True when the server closed the connection (reads EOF within the timeout).
    bool wait_closed();
    void close();

private:
    bool fill();  // reads more into buf_
    int fd_ = -1;
    std::string buf_;
    std::chrono::seconds timeout_;
};

// One request on a fresh connection.
std::optional<HttpResponse> http_request(uint16_t port, const std::string& method, const std::string& path,
                                         const std::string& body = {}, const std::vector<std::string>& headers = {});

// The payloads of the "data: ..." events of a server-sent event stream, in order.
std::vector<std::string> sse_payloads(const std::string& body);

} // namespace arbor::test
