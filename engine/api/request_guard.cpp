#include "api/request_guard.h"

#include "arbor/error.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>
#include <string_view>

namespace arbor::api {
namespace {

struct CanonicalHost {
    std::string text;  // lowercase name, or the address as inet_ntop writes it
    bool ip = false;
};

// A host without its port: an IPv4 address, an IPv6 address (bracketed, or bare when
// bare_ipv6 allows it) or a DNS name. nullopt when it is none of these.
std::optional<CanonicalHost> canonical_host(std::string_view host, bool bare_ipv6) {
    const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) host = host.substr(1, host.size() - 2);
    const std::string text(host);
    char buf[INET6_ADDRSTRLEN];
    unsigned char addr[16];
    if ((bracketed || bare_ipv6) && text.find(':') != std::string::npos) {
        if (inet_pton(AF_INET6, text.c_str(), addr) != 1) return std::nullopt;
        return CanonicalHost{inet_ntop(AF_INET6, addr, buf, sizeof buf), true};
    }
    if (bracketed) return std::nullopt;
    if (inet_pton(AF_INET, text.c_str(), addr) == 1) return CanonicalHost{inet_ntop(AF_INET, addr, buf, sizeof buf), true};
    const bool name_chars = std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
               c == '_';
    });
    if (text.empty() || !name_chars) return std::nullopt;
    return CanonicalHost{ascii_lower(text), false};
}

// The host part of a Host header value "host[:port]" (RFC 9110, section 7.2).
std::optional<CanonicalHost> host_of_header(std::string_view value) {
    size_t host_end = 0;
    if (!value.empty() && value.front() == '[') {
        host_end = value.find(']');
        if (host_end == std::string_view::npos) return std::nullopt;
        ++host_end;
    } else {
        host_end = std::min(value.find(':'), value.size());
    }
    std::string_view port = value.substr(host_end);
    if (!port.empty()) {
        if (port.front() != ':') return std::nullopt;
        port.remove_prefix(1);
        unsigned n = 0;
        const auto r = std::from_chars(port.data(), port.data() + port.size(), n);
        if (!port.empty() && (r.ec != std::errc() || r.ptr != port.data() + port.size() || n > 65535))
            return std::nullopt;
    }
    return canonical_host(value.substr(0, host_end), false);
}

ApiError bad_host(const std::string& message) { return ApiError(400, message, {}, "invalid_host"); }

} // namespace

HostGuard::HostGuard(const std::string& bound_host, const std::vector<std::string>& allowed_hosts) {
    for (const char* name : {"localhost", "127.0.0.1", "::1"}) names_.push_back(name);
    const std::string bound = ascii_lower(bound_host);
    any_ip_ = bound.empty() || bound == "0.0.0.0" || bound == "::" || bound == "[::]";
    if (auto h = canonical_host(bound, true)) names_.push_back(h->text);
    for (const auto& allowed : allowed_hosts) {
        if (allowed == "*") any_host_ = true;
        else if (auto h = canonical_host(allowed, true)) names_.push_back(h->text);
        else throw Error("'" + allowed + "' is not a host name or IP address (without a port) to allow");
    }
}

bool valid_allowed_host(const std::string& host) { return host == "*" || canonical_host(host, true).has_value(); }

bool HostGuard::allows(const std::string& host) const {
    return std::find(names_.begin(), names_.end(), host) != names_.end();
}

std::optional<ApiError> HostGuard::check(const HttpRequest& request) const {
    const std::string* value = nullptr;
    for (const auto& [name, v] : request.headers) {
        if (name != "host") continue;
        if (value) return bad_host("the request has more than one Host header");
        value = &v;
    }
    if (!value) return bad_host("the request has no Host header");
    const auto host = host_of_header(*value);
    if (!host) return bad_host("the Host header '" + *value + "' is not a host name or address with an optional port");
    if (any_host_ || allows(host->text) || (any_ip_ && host->ip)) return std::nullopt;
    return ApiError(421,
                    "this server does not answer to the host name '" + host->text +
                        "'; use its address or localhost, or allow the name (arbor-server --allowed-hosts)",
                    {}, "host_not_allowed");
}

std::optional<ApiError> check_json_content_type(const HttpRequest& request) {
    const std::string* value = nullptr;
    for (const auto& [name, v] : request.headers) {
        if (name != "content-type") continue;
        if (value) return ApiError(400, "the request has more than one Content-Type header", {}, "invalid_content_type");
        value = &v;
    }
    const auto unsupported = [&](const std::string& why) {
        return ApiError(415, why + "; send the body as JSON with 'Content-Type: application/json'", {},
                        "unsupported_media_type");
    };
    if (!value) return unsupported("the request has no Content-Type");
    std::string_view rest = *value;
    const size_t semicolon = std::min(rest.find(';'), rest.size());
    if (ascii_lower(trim_whitespace(rest.substr(0, semicolon))) != "application/json")
        return unsupported("the Content-Type '" + *value + "' is not application/json");
    rest.remove_prefix(semicolon);
    while (!rest.empty()) {
        rest.remove_prefix(1);  // the ';'
        const size_t next = std::min(rest.find(';'), rest.size());
        const std::string_view parameter = rest.substr(0, next);
        rest.remove_prefix(next);
        const size_t eq = parameter.find('=');
        if (eq == std::string_view::npos || ascii_lower(trim_whitespace(parameter.substr(0, eq))) != "charset") continue;
        std::string_view charset = trim_whitespace(parameter.substr(eq + 1));
        if (charset.size() >= 2 && charset.front() == '"' && charset.back() == '"')
            charset = charset.substr(1, charset.size() - 2);
        const std::string name = ascii_lower(charset);
        if (name != "utf-8" && name != "utf8")
            return unsupported("JSON bodies must be UTF-8, not '" + std::string(charset) + "'");
    }
    return std::nullopt;
}

} // namespace arbor::api
