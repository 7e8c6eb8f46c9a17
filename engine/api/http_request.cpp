#include "api/http_request.h"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>

namespace arbor::api {
namespace http = boost::beast::http;

struct RequestParser::Beast {
    http::request_parser<http::string_body> parser;
};

namespace {

HttpParseError parse_error_of(const boost::system::error_code& ec, size_t max_body_bytes) {
    if (ec == http::error::header_limit) return {431, "the request head is too large"};
    if (ec == http::error::body_limit)
        return {413, "the request body is larger than " + std::to_string(max_body_bytes) + " bytes"};
    if (ec == http::error::bad_method || ec == http::error::bad_target || ec == http::error::bad_version ||
        ec == http::error::bad_line_ending)
        return {400, "malformed request line"};
    if (ec == http::error::bad_field || ec == http::error::bad_value || ec == http::error::bad_obs_fold)
        return {400, "malformed header line"};
    if (ec == http::error::bad_content_length) return {400, "malformed or conflicting Content-Length"};
    if (ec == http::error::bad_transfer_encoding)
        return {400, "Transfer-Encoding given twice or together with Content-Length"};
    if (ec == http::error::bad_chunk || ec == http::error::bad_chunk_extension) return {400, "malformed chunk framing"};
    return {400, "malformed request: " + ec.message()};
}

// Whether the head, scanned from where `scan` stopped to the end of `data` or to the
// blank line that ends the head, has a line feed without its carriage return or a
// carriage return followed by anything but a line feed. Such a head is refused at once:
// Beast reads it differently whole (it waits for CR LF CR LF) and in pieces (line by
// line), so the outcome would depend on how the bytes arrive. `scan` carries the state
// from one feed to the next, so each byte is looked at once however the head arrives.
bool malformed_line_end(RequestParser::LineEndScan& scan, std::string_view data) {
    for (; scan.checked < data.size() && !scan.head_ended; ++scan.checked) {
        const char c = data[scan.checked];
        if (scan.prev == '\r' && c != '\n') return true;
        if (c == '\n') {
            if (scan.prev != '\r') return true;
            if (scan.blank) scan.head_ended = true;  // the blank line: the body follows
            else scan.blank = true;
        } else if (c != '\r') {
            scan.blank = false;
        }
        scan.prev = c;
    }
    return false;
}

// What Beast accepts but this server does not; `head` is the raw head.
std::optional<HttpParseError> refused_head(std::string_view head, const HttpRequest& req) {
    // Beast unfolds obs-fold lines; RFC 9112 (5.2) lets a server refuse them instead,
    // which keeps one reading of every header.
    if (head.find("\r\n ") != std::string_view::npos || head.find("\r\n\t") != std::string_view::npos)
        return HttpParseError{400, "folded header lines are not allowed"};
    if (req.target.empty() || (req.target[0] != '/' && req.target != "*"))
        return HttpParseError{400, "the request target must be an absolute path"};
    if (req.headers.size() > 100) return HttpParseError{431, "too many header fields"};
    for (const auto& [name, value] : req.headers) {
        for (char c : value)
            if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F)
                return HttpParseError{400, "control character in a header value"};
        if (name == "transfer-encoding" && ascii_lower(trim_whitespace(value)) != "chunked")
            return HttpParseError{501, "Transfer-Encoding '" + value + "' is not supported"};
    }
    return std::nullopt;
}

} // namespace

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

std::string_view trim_whitespace(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

const std::string* HttpRequest::header(std::string_view name) const {
    for (const auto& [k, v] : headers)
        if (k == name) return &v;
    return nullptr;
}

bool HttpRequest::keep_alive() const {
    const std::string* c = header("connection");
    const std::string v = c ? ascii_lower(*c) : std::string();
    if (minor_version == 0) return v.find("keep-alive") != std::string::npos;
    return v.find("close") == std::string::npos;
}

RequestParser::RequestParser(const HttpLimits& limits)
    : beast_(std::make_unique<Beast>()), max_body_bytes_(limits.max_body_bytes) {
    beast_->parser.header_limit(uint32_t(std::min<size_t>(limits.max_head_bytes, UINT32_MAX)));
    beast_->parser.body_limit(limits.max_body_bytes);
    beast_->parser.eager(false);  // stop after the head
}

RequestParser::~RequestParser() = default;

size_t RequestParser::body_bytes() const {
    return state_ == State::NeedMore ? 0 : beast_->parser.get().body().size();
}

HttpRequest RequestParser::take() { return std::move(request_); }

size_t RequestParser::feed(std::string_view data) {
    auto& parser = beast_->parser;
    auto fail = [&](HttpParseError e) {
        error_ = std::move(e);
        state_ = State::Failed;
    };
    size_t used = 0;
    if (state_ == State::NeedMore) {
        // Empty lines before the request line are skipped, and counted as used; once
        // part of the head is consumed, CR LF at the front is its blank line.
        if (head_.empty()) {
            while (data.size() >= 2 && data[0] == '\r' && data[1] == '\n') {
                data.remove_prefix(2);
                used += 2;
            }
            if (data.empty() || (data.size() == 1 && data[0] == '\r')) return used;
        }
        if (malformed_line_end(line_ends_, data)) {
            fail({400, "malformed request head: a line does not end with CR LF"});
            return used;
        }
        // Beast consumes the request line and whole header lines as they come; the raw
        // head is kept for the checks Beast does not make.
        boost::system::error_code ec;
        const size_t n = parser.put(boost::asio::buffer(data.data(), data.size()), ec);
        head_.append(data.substr(0, n));
        line_ends_.checked -= std::min(n, line_ends_.checked);
        used += n;
        if (ec == http::error::need_more) return used;
        if (ec) {
            fail(parse_error_of(ec, max_body_bytes_));
            return used;
        }
        const auto& msg = parser.get();
        request_ = HttpRequest{};
        request_.method = std::string(msg.method_string().data(), msg.method_string().size());
        request_.target = std::string(msg.target().data(), msg.target().size());
        request_.path = request_.target.substr(0, request_.target.find('?'));
        if (msg.version() != 10 && msg.version() != 11) {
            fail({400, "malformed request line: only HTTP/1.0 and HTTP/1.1 are served"});
            return used;
        }
        request_.minor_version = msg.version() % 10;
        for (const auto& field : msg) {
            const auto name = field.name_string();
            const auto value = field.value();
            request_.headers.emplace_back(ascii_lower(std::string_view(name.data(), name.size())),
                                          std::string(value.data(), value.size()));
        }
        if (auto refused = refused_head(head_, request_)) {
            fail(std::move(*refused));
            return used;
        }
        head_.clear();
        state_ = State::HeadDone;
        parser.eager(true);
        return used;
    }
    if (state_ != State::HeadDone) return 0;
    while (!parser.is_done() && !data.empty()) {
        boost::system::error_code ec;
        const size_t n = parser.put(boost::asio::buffer(data.data(), data.size()), ec);
        data.remove_prefix(n);
        used += n;
        if (ec == http::error::need_more) break;
        if (ec) {
            fail(parse_error_of(ec, max_body_bytes_));
            return used;
        }
        if (n == 0) break;
    }
    if (parser.is_done()) {
        request_.body = std::move(parser.get().body());
        state_ = State::Done;
    }
    return used;
}

ParsedRequest parse_http_request(std::string_view bytes, const HttpLimits& limits) {
    ParsedRequest out;
    RequestParser parser(limits);
    size_t pos = parser.feed(bytes);
    if (parser.state() == RequestParser::State::HeadDone) pos += parser.feed(bytes.substr(pos));
    if (parser.state() == RequestParser::State::Failed) out.error = parser.error();
    if (parser.state() == RequestParser::State::Done) {
        out.request = parser.take();
        out.length = pos;
    }
    return out;
}

const char* http_reason(int status) {
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

} // namespace arbor::api
