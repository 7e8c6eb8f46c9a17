// Checks that keep web pages out of the local API, applied before a request is routed.
//
// - Host: a page served from attacker.example can make its name resolve to 127.0.0.1
//   (DNS rebinding) and then read the API's replies as same-origin; the browser still
//   sends "Host: attacker.example". Only names of this server are answered: localhost,
//   127.0.0.1, [::1], the address it is bound to (when bound to a wildcard address, any
//   IP address: rebinding needs a name) and the names the user allowed. Others get 421.
//   A missing, doubled or malformed Host is 400 (RFC 9112, section 3.2).
// - Content-Type: a page may POST cross-site without a CORS preflight only with
//   text/plain, form or multipart bodies, so requiring application/json (UTF-8) for
//   POST bodies makes every cross-site POST need a preflight, which CORS refuses unless
//   the user allowed that origin. Others get 415.
#pragma once

#include "api/api_error.h"
#include "api/http_request.h"

#include <optional>
#include <string>
#include <vector>

namespace arbor::api {

class HostGuard {
public:
    // bound_host: the address the server listens on. allowed_hosts: further names or
    // addresses (case-insensitive, without port; IPv6 with or without brackets); "*"
    // allows any Host, which turns the check off. Throws arbor::Error for an entry that
    // is none of these.
    HostGuard(const std::string& bound_host, const std::vector<std::string>& allowed_hosts);

    // nullopt when the request's Host names this server.
    std::optional<ApiError> check(const HttpRequest& request) const;

private:
    bool allows(const std::string& host) const;

    std::vector<std::string> names_;  // canonical: lowercase names, IP addresses as inet_ntop writes them
    bool any_host_ = false;
    bool any_ip_ = false;  // bound to 0.0.0.0 or ::
};

// What HostGuard accepts as an allowed host: "*", a DNS name or an IP address, no port.
bool valid_allowed_host(const std::string& host);

// nullopt when the request's body is declared as JSON: "application/json", optionally
// with parameters; a charset parameter must be UTF-8.
std::optional<ApiError> check_json_content_type(const HttpRequest& request);

} // namespace arbor::api
