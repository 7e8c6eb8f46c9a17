// Files that hold a secret (an API key, the cache namespace key): written so that no other
// user can read them at any moment and no reader ever sees half of one.
#pragma once

#include <filesystem>
#include <string_view>

namespace arbor {

// What write_private_file does when `file` already exists.
enum class ExistingFile {
    Replace,  // the new contents take its place
    Keep,     // it stays; of writers racing to create `file`, the first one wins
};

// Writes `contents` to a new file beside `file`, readable and writable by its owner only
// (0600 from its creation, whatever the umask), syncs it, and then renames it over `file`
// (Replace) or links it there (Keep): a reader sees the old contents or the new, never a
// part. The directory must exist. Returns false only when Keep found `file` there; throws
// arbor::Error naming the file and the reason when it cannot be written, and then leaves
// nothing behind.
bool write_private_file(const std::filesystem::path& file, std::string_view contents,
                        ExistingFile existing = ExistingFile::Replace);

} // namespace arbor
