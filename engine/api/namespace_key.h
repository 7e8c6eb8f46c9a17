// The key of the API's prefix-cache namespaces (cache_scope.h), kept in a file so that a
// restarted server derives the same namespace for the same client again and finds that
// client's pages on the KV disk tier; a key drawn anew at each start would orphan them.
//
// The file holds the key as 32 lowercase hex digits and a newline. It must be a regular
// file of this user, readable by the user only (0600): whoever reads it can tell which
// namespace a token lands in. A new file is written to a temporary name (0600 from the
// start) and then linked or renamed into place, so a reader never sees half a key.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>

namespace arbor::api {

using NamespaceKey = std::array<uint64_t, 2>;

struct LoadedNamespaceKey {
    NamespaceKey key{};
    bool from_file = false;  // read back from the file (else drawn now)
    std::string warning;     // non-empty when the file was unusable or could not be written
};

// Reads the key from `file`, or draws one and stores it there. A file that is not a key
// (corrupt, another's, readable by others, not a regular file) is replaced by a new key,
// with a warning; when the new key cannot be stored it serves this run only (warning).
LoadedNamespaceKey load_or_create_namespace_key(const std::filesystem::path& file);

// A key drawn from the system's random source.
NamespaceKey random_namespace_key();

} // namespace arbor::api
