#include "store/token_blob.h"

namespace arbor::store {

std::vector<unsigned char> encode_tokens(std::span<const std::int32_t> ids) {
    std::vector<unsigned char> bytes(ids.size() * 4);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto v = static_cast<std::uint32_t>(ids[i]);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<unsigned char>(v >> (8 * b));
    }
    return bytes;
}

bool decode_tokens(std::span<const unsigned char> bytes, std::vector<std::int32_t>& ids) {
    if (bytes.size() % 4 != 0) return false;
    ids.resize(bytes.size() / 4);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        std::uint32_t v = 0;
        for (int b = 0; b < 4; ++b) v |= std::uint32_t(bytes[i * 4 + b]) << (8 * b);
        ids[i] = static_cast<std::int32_t>(v);
    }
    return true;
}

} // namespace arbor::store
