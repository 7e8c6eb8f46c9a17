// HTTP/1.1 requests parsed from bytes with Boost.Beast's parser (RFC 9112), with no I/O:
// the server feeds what it read and learns whether the head or the whole request is
// complete; parse_http_request() does the same for bytes held in memory (tests, fuzzing).
// On top of Beast's checks this refuses folded header lines, targets that are not an
// absolute path, versions other than 1.0 and 1.1, Transfer-Encodings other than chunked
// (501) and more than 100 header fields (431).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::api {

struct HttpRequest {
    std::string method;
    std::string target;  // as sent: path plus optional query
    std::string path;    // target without the query
    int minor_version = 1;
    std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
    std::string body;

    // First header of that (lowercase) name.
    const std::string* header(std::string_view name) const;
    // HTTP/1.1 keeps the connection unless "Connection: close"; 1.0 only on "keep-alive".
    bool keep_alive() const;
};

// Why a request could not be read: the status to answer with, then close.
struct HttpParseError {
    int status = 400;
    std::string message;
};

struct HttpLimits {
    size_t max_head_bytes = 32u << 10;
    size_t max_body_bytes = 4u << 20;
};

// Reads one request incrementally. feed() stops after the head (state HeadDone, so the
// server can answer "Expect: 100-continue" before the body comes) and again after the
// body (Done); bytes past the request (a pipelined next one) are not consumed.
class RequestParser {
public:
    enum class State { NeedMore, HeadDone, Done, Failed };

    explicit RequestParser(const HttpLimits& limits);
    ~RequestParser();
    RequestParser(const RequestParser&) = delete;
    RequestParser& operator=(const RequestParser&) = delete;

    // Parses from the front of data; returns how many bytes it used. The caller drops
    // those and calls again with the rest followed by what arrives next.
    size_t feed(std::string_view data);
    State state() const { return state_; }
    // Bytes of the body received so far.
    size_t body_bytes() const;
    // From HeadDone on: the request (with its body once Done). take() moves it out.
    const HttpRequest& request() const { return request_; }
    HttpRequest take();
    const HttpParseError& error() const { return error_; }

    // How far the line ends of the head are checked: `checked` bytes of the unconsumed
    // input, the last of them `prev`; `blank`: the line they end in holds nothing but a
    // carriage return so far (never the request line); `head_ended`: the blank line came.
    struct LineEndScan {
        size_t checked = 0;
        char prev = '\0';
        bool blank = false;
        bool head_ended = false;
    };

private:
    struct Beast;
    std::unique_ptr<Beast> beast_;
    State state_ = State::NeedMore;
    HttpRequest request_;
    HttpParseError error_;
    std::string head_;  // the raw head so far (at most the head limit)
    LineEndScan line_ends_;
    size_t max_body_bytes_;
};

// One whole request from the front of `bytes`. nullopt with `error` unset: the bytes
// end before the request does.
struct ParsedRequest {
    std::optional<HttpRequest> request;
    std::optional<HttpParseError> error;
    size_t length = 0;  // bytes of the request (when parsed)
};
ParsedRequest parse_http_request(std::string_view bytes, const HttpLimits& limits = {});

const char* http_reason(int status);

// Header values: ASCII lowercase (names and tokens are case-insensitive), and without
// the optional whitespace (spaces, tabs) around them.
std::string ascii_lower(std::string_view s);
std::string_view trim_whitespace(std::string_view s);

} // namespace arbor::api
