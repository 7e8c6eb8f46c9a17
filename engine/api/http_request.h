// HTTP/1.1 request heads and bodies parsed from bytes (RFC 9112), with no I/O: the
// server feeds what it read and learns whether a head or body is complete.
#pragma once

#include <cstddef>
#include <cstdint>
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

// Why a head or body could not be read: the status to answer with, then close.
struct HttpParseError {
    int status = 400;
    std::string message;
};

struct HeadResult {
    enum class State { Incomplete, Complete, Failed } state = State::Incomplete;
    size_t length = 0;    // bytes of the head including the blank line (Complete)
    HttpParseError error;  // Failed
};

// Parses the request head at the start of buf into req. A head longer than max_bytes
// fails with 431. Leading empty lines (allowed before a request) are skipped.
HeadResult parse_request_head(std::string_view buf, size_t max_bytes, HttpRequest& req);

// How the body of a parsed head is framed.
struct BodyFraming {
    bool chunked = false;
    uint64_t length = 0;  // Content-Length when not chunked (0 when absent)
};
// Fails for conflicting or malformed Content-Length, an unsupported Transfer-Encoding
// (501) or both headers at once.
std::optional<HttpParseError> body_framing(const HttpRequest& req, BodyFraming& out);

// Decodes a chunked body incrementally; trailers are read and dropped.
class ChunkedDecoder {
public:
    explicit ChunkedDecoder(size_t max_body) : max_body_(max_body) {}
    enum class State { NeedMore, Done, Failed };
    // Consumes bytes from the front of buf (erasing what it used), appending data to body.
    State feed(std::string& buf, std::string& body);
    const HttpParseError& error() const { return error_; }

private:
    enum class Phase { Size, Data, DataEnd, Trailers } phase_ = Phase::Size;
    uint64_t remaining_ = 0;
    size_t max_body_;
    HttpParseError error_;
};

const char* http_reason(int status);

// Header values: ASCII lowercase (names and tokens are case-insensitive), and without
// the optional whitespace (spaces, tabs) around them.
std::string ascii_lower(std::string_view s);
std::string_view trim_whitespace(std::string_view s);

} // namespace arbor::api
