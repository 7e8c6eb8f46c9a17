#include "api/http_request.h"

#include <algorithm>
#include <charconv>

namespace arbor::api {
namespace {

bool is_tchar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

HeadResult failed(int status, std::string message) {
    HeadResult r;
    r.state = HeadResult::State::Failed;
    r.error = {status, std::move(message)};
    return r;
}

bool parse_request_line(std::string_view line, HttpRequest& req) {
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 == 0) return false;
    const size_t sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return false;
    const auto method = line.substr(0, sp1);
    const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const auto version = line.substr(sp2 + 1);
    if (!std::all_of(method.begin(), method.end(), is_tchar)) return false;
    for (char c : target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return false;
    if (version == "HTTP/1.1") req.minor_version = 1;
    else if (version == "HTTP/1.0") req.minor_version = 0;
    else return false;
    req.method = std::string(method);
    req.target = std::string(target);
    req.path = req.target.substr(0, req.target.find('?'));
    return true;
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

HeadResult parse_request_head(std::string_view buf, size_t max_bytes, HttpRequest& req) {
    size_t start = 0;
    while (start + 1 < buf.size() && buf[start] == '\r' && buf[start + 1] == '\n') start += 2;
    const size_t end = buf.find("\r\n\r\n", start);
    if (end == std::string_view::npos) {
        if (buf.size() > max_bytes) return failed(431, "the request head is too large");
        return {};
    }
    if (end + 4 > max_bytes) return failed(431, "the request head is too large");
    req = HttpRequest{};
    std::string_view head = buf.substr(start, end - start);
    size_t eol = head.find("\r\n");
    if (!parse_request_line(head.substr(0, eol), req)) return failed(400, "malformed request line");
    if (req.target.empty() || (req.target[0] != '/' && req.target != "*"))
        return failed(400, "the request target must be an absolute path");
    while (eol != std::string_view::npos) {
        head.remove_prefix(eol + 2);
        eol = head.find("\r\n");
        const auto line = head.substr(0, eol);
        if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) return failed(400, "folded header lines are not allowed");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) return failed(400, "malformed header line");
        const auto name = line.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_tchar)) return failed(400, "malformed header name");
        const auto value = trim_whitespace(line.substr(colon + 1));
        for (char c : value)
            if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F)
                return failed(400, "control character in a header value");
        if (req.headers.size() >= 100) return failed(431, "too many header fields");
        req.headers.emplace_back(ascii_lower(name), std::string(value));
    }
    HeadResult r;
    r.state = HeadResult::State::Complete;
    r.length = end + 4;
    return r;
}

std::optional<HttpParseError> body_framing(const HttpRequest& req, BodyFraming& out) {
    out = {};
    bool has_length = false;
    for (const auto& [k, v] : req.headers) {
        if (k == "transfer-encoding") {
            if (ascii_lower(trim_whitespace(v)) != "chunked")
                return HttpParseError{501, "Transfer-Encoding '" + v + "' is not supported"};
            out.chunked = true;
        } else if (k == "content-length") {
            uint64_t n = 0;
            const auto t = trim_whitespace(v);
            auto r = std::from_chars(t.data(), t.data() + t.size(), n);
            if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size())
                return HttpParseError{400, "malformed Content-Length"};
            if (has_length && n != out.length) return HttpParseError{400, "conflicting Content-Length headers"};
            has_length = true;
            out.length = n;
        }
    }
    if (out.chunked && has_length) return HttpParseError{400, "both Content-Length and Transfer-Encoding given"};
    return std::nullopt;
}

ChunkedDecoder::State ChunkedDecoder::feed(std::string& buf, std::string& body) {
    auto fail = [&](int status, std::string msg) {
        error_ = {status, std::move(msg)};
        return State::Failed;
    };
    size_t pos = 0;
    State result = State::NeedMore;
    while (result == State::NeedMore) {
        if (phase_ == Phase::Data) {
            const size_t take = size_t(std::min<uint64_t>(remaining_, buf.size() - pos));
            if (take == 0) break;
            body.append(buf, pos, take);
            pos += take;
            remaining_ -= take;
            if (remaining_ == 0) phase_ = Phase::DataEnd;
            continue;
        }
        const size_t eol = buf.find("\r\n", pos);
        if (eol == std::string::npos) {
            if (buf.size() - pos > 4096) {
                result = fail(400, "malformed chunk framing");
                break;
            }
            break;
        }
        std::string_view line(buf.data() + pos, eol - pos);
        pos = eol + 2;
        if (phase_ == Phase::DataEnd) {
            if (!line.empty()) result = fail(400, "chunk data longer than its size");
            phase_ = Phase::Size;
        } else if (phase_ == Phase::Size) {
            line = line.substr(0, line.find(';'));  // chunk extensions are ignored
            line = trim_whitespace(line);
            uint64_t n = 0;
            auto r = std::from_chars(line.data(), line.data() + line.size(), n, 16);
            if (line.empty() || r.ec != std::errc() || r.ptr != line.data() + line.size()) {
                result = fail(400, "malformed chunk size");
            } else if (n > max_body_ || body.size() + n > max_body_) {
                result = fail(413, "the request body is larger than " + std::to_string(max_body_) + " bytes");
            } else if (n == 0) {
                phase_ = Phase::Trailers;
            } else {
                remaining_ = n;
                phase_ = Phase::Data;
            }
        } else if (line.empty()) {  // end of the trailers
            result = State::Done;
        }
    }
    buf.erase(0, pos);
    return result;
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
