// Content address of one whole KV page for the disk tier: a 128-bit hash chain. A
// namespace's root key mixes the model fingerprint with the cache namespace; each page's
// key mixes its parent's key with the page's own token ids, so equal keys mean (up to a
// 2^-128 accident) equal models, namespaces and token prefixes. The store still compares
// the token ids and parent key it kept with the ones asked for before using a page.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace arbor::kv {

struct PageKey {
    uint64_t hi = 0, lo = 0;

    bool operator==(const PageKey&) const = default;
    std::string hex() const {
        char buf[33];
        std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                      static_cast<unsigned long long>(lo));
        return buf;
    }
};

struct PageKeyHash {
    size_t operator()(const PageKey& k) const { return size_t(k.hi ^ (k.lo * 0x9e3779b97f4a7c15ull)); }
};

namespace page_key_detail {
inline uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}
} // namespace page_key_detail

// Two independently seeded lanes over the parent key and the words.
inline PageKey chain_key(const PageKey& parent, std::span<const uint64_t> words) {
    using page_key_detail::mix;
    uint64_t a = mix(parent.hi ^ 0x243f6a8885a308d3ull), b = mix(parent.lo ^ 0x13198a2e03707344ull);
    a = mix(a ^ parent.lo);
    b = mix(b + parent.hi);
    for (const uint64_t w : words) {
        a = mix(a ^ w) + 0x9e3779b97f4a7c15ull;
        b = mix(b + w * 0xff51afd7ed558ccdull) ^ 0xc4ceb9fe1a85ec53ull;
    }
    return PageKey{mix(a ^ (b >> 17)), mix(b ^ (a << 13))};
}

inline PageKey chain_key(const PageKey& parent, std::span<const int32_t> tokens) {
    PageKey k = parent;
    uint64_t buf[32];
    size_t n = 0;
    // Token count first, so that chunkings of one sequence never collide.
    buf[n++] = tokens.size();
    for (const int32_t t : tokens) {
        buf[n++] = uint32_t(t);
        if (n == 32) {
            k = chain_key(k, std::span<const uint64_t>(buf, n));
            n = 0;
        }
    }
    return chain_key(k, std::span<const uint64_t>(buf, n));
}

// Root of a namespace's chain.
inline PageKey root_key(const PageKey& model_fingerprint, uint64_t cache_namespace) {
    const uint64_t w[2] = {0x6e616d6573706163ull, cache_namespace};
    return chain_key(model_fingerprint, std::span<const uint64_t>(w, 2));
}

} // namespace arbor::kv
