#include "api/cache_scope.h"

#include <cstring>
#include <string>

namespace arbor::api {
namespace {

constexpr uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
    uint64_t v0, v1, v2, v3;
    void round() {
        v0 += v1;
        v1 = rotl(v1, 13);
        v1 ^= v0;
        v0 = rotl(v0, 32);
        v2 += v3;
        v3 = rotl(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = rotl(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = rotl(v1, 17);
        v1 ^= v2;
        v2 = rotl(v2, 32);
    }
    void absorb(uint64_t m) {
        v3 ^= m;
        round();
        round();
        v0 ^= m;
    }
};

uint64_t load_le64(const unsigned char* p, size_t n) {
    uint64_t m = 0;
    for (size_t i = 0; i < n; ++i) m |= uint64_t(p[i]) << (8 * i);
    return m;
}

} // namespace

uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data) {
    SipState s{k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
               k1 ^ 0x7465646279746573ull};
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const size_t whole = data.size() / 8 * 8;
    for (size_t i = 0; i < whole; i += 8) s.absorb(load_le64(p + i, 8));
    s.absorb(load_le64(p + whole, data.size() - whole) | (uint64_t(data.size() & 0xff) << 56));
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; ++i) s.round();
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

CacheScope::CacheScope(bool share_app_cache, const NamespaceKey& key) : share_app_cache_(share_app_cache), key_(key) {}

uint64_t CacheScope::keyed_hash(std::string_view domain, uint64_t base, std::string_view text) const {
    // domain \0 base (8 bytes) text: unambiguous, since the domain holds no \0.
    std::string message(domain);
    message.push_back('\0');
    char bytes[8];
    std::memcpy(bytes, &base, 8);
    message.append(bytes, 8);
    message.append(text);
    const uint64_t h = siphash24(key_[0], key_[1], message);
    return h == 0 ? 1 : h;  // 0 is the app's: never derived
}

uint64_t CacheScope::namespace_for(std::optional<std::string_view> token, std::optional<std::string_view> salt) const {
    uint64_t ns = 0;
    if (!share_app_cache_) ns = token ? keyed_hash("token", 0, *token) : keyed_hash("keyless", 0, {});
    if (salt) ns = keyed_hash("salt", ns, *salt);
    return ns;
}

} // namespace arbor::api
