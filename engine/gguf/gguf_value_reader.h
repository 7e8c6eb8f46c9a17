// Decoding of GGUF metadata values from the byte stream (internal to arbor_gguf).
#pragma once

#include "arbor/gguf.h"
#include "byte_reader.h"

#include <cstdint>

namespace arbor::gguf_detail {

// Arrays may nest (arrays of arrays of strings...) at most this deep.
inline constexpr int kMaxArrayDepth = 8;

// Validates a raw value type id read from the file; throws naming the id.
GgufType checked_type(uint32_t raw);

// Reads one value of the given type; `depth` counts the enclosing arrays.
GgufValue read_value(ByteReader& in, GgufType type, int depth = 0);

} // namespace arbor::gguf_detail
