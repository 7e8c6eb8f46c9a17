// Token ids are stored as a BLOB of little-endian int32, independent of the host.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace arbor::store {

std::vector<unsigned char> encode_tokens(std::span<const std::int32_t> ids);
// Returns false when the blob's size is not a multiple of 4.
bool decode_tokens(std::span<const unsigned char> bytes, std::vector<std::int32_t>& ids);

} // namespace arbor::store
