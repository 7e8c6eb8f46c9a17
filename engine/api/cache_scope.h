// Which prefix-cache namespace (Request::cache_namespace) an API request runs in.
//
// The engine's prefix cache reports how much of a prompt it already held
// (usage.prompt_tokens_details.cached_tokens, and the time to the first token), so a
// client that shares it with others can recover their prompts token by token by
// guessing prefixes. Sharing is therefore scoped:
// - namespace 0 is the app's own conversations; no API request gets it unless the user
//   lets the API share the app's cache (ApiServerOptions::share_app_cache);
// - each bearer token gets a namespace of its own: the API key when one is required,
//   or, when none is, whatever token a client chooses to send;
// - clients that send no token share one namespace: a loopback client has no identity
//   of its own to tell it from another;
// - a request's cache_salt (as in vLLM) moves it into a further namespace derived from
//   the one above and the salt, for clients that want to separate their own users.
// Namespaces are a keyed hash (SipHash-2-4) under a secret key, so no token or salt can
// be chosen to land in another's namespace or the app's. The server keeps its key in a
// file (namespace_key.h): the same client gets the same namespace after a restart, and
// so finds its pages on the KV disk tier again.
#pragma once

#include "api/namespace_key.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace arbor::api {

class CacheScope {
public:
    CacheScope(bool share_app_cache, const NamespaceKey& key);

    // token: the request's bearer token, if it sent one; salt: its cache_salt, if any.
    uint64_t namespace_for(std::optional<std::string_view> token, std::optional<std::string_view> salt) const;

private:
    uint64_t keyed_hash(std::string_view domain, uint64_t base, std::string_view text) const;

    bool share_app_cache_;
    NamespaceKey key_;
};

// SipHash-2-4 of `data` under the 128-bit key (k0, k1).
uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data);

} // namespace arbor::api
