// ResponseWriter: HTTP/1.1 response framing (Content-Length, chunked, or to the close for
// HTTP/1.0) over the server's connection.
#include "api/http_server.h"

#include <cstdio>

namespace arbor::api {

std::string ResponseWriter::head(int status, const HttpHeaders& headers, const std::string& framing) const {
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + http_reason(status) + "\r\n";
    for (const auto& [k, v] : headers) h += k + ": " + v + "\r\n";
    h += framing;
    if (close_after_ || http10_) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

bool ResponseWriter::send_all(std::string data) {
    if (failed_) return false;
    if (!sink_.write(std::move(data))) failed_ = true;
    return !failed_;
}

bool ResponseWriter::send(int status, const HttpHeaders& headers, std::string_view body) {
    if (started_) return false;
    started_ = true;
    std::string out = head(status, headers, "Content-Length: " + std::to_string(body.size()) + "\r\n");
    out.append(body);
    return send_all(std::move(out));
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
    if (http10_) return send_all(std::string(data));
    char size[20];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk(size, size_t(n));
    chunk.append(data);
    chunk += "\r\n";
    return send_all(std::move(chunk));
}

bool ResponseWriter::end_stream() {
    if (!streaming_) return !failed_;
    streaming_ = false;
    return http10_ ? !failed_ : send_all("0\r\n\r\n");
}

bool ResponseWriter::client_gone() {
    if (!failed_ && sink_.peer_gone()) failed_ = true;
    return failed_;
}

} // namespace arbor::api
