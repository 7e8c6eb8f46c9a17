// Read-only memory mapping of a whole regular file (internal to arbor_gguf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace arbor::gguf_detail {

struct Mapping {
    const uint8_t* data = nullptr;
    size_t size = 0;
};

// Maps `path` read-only; throws arbor::Error for a missing path, a directory or other
// non-regular file, an empty file, or a failing system call.
Mapping map_file(const std::filesystem::path& path);
void unmap_file(const Mapping& mapping) noexcept;
// Unmaps this process's copy of the whole pages inside [begin, begin + bytes) (within
// the mapping); touched again, they are read from the file.
void release_pages(const uint8_t* begin, size_t bytes) noexcept;

} // namespace arbor::gguf_detail
