// The database holds the user's conversations and the app's settings: its files are
// the user's alone. New files are created 0600 and a new data directory 0700; files
// left more open by an older version are tightened when the store opens them. Only
// group and other bits are removed, so a file the user made read-only stays read-only.
#pragma once

#include <filesystem>

namespace arbor::store {

// Creates `dir` and its missing parents; the directories created here get 0700.
// `tighten` also removes group and other access from `dir` when it already exists.
// Throws StoreError when a directory cannot be created.
void make_private_dir(const std::filesystem::path& dir, bool tighten);

// Creates `file` empty with 0600 when it does not exist (SQLite then takes it as a new
// database, and gives its -wal and -shm files the same mode); otherwise tightens it.
void make_private_file(const std::filesystem::path& file);

// Removes group and other access from `file` if it exists; a failure (a file of another
// user) is logged, not thrown: the store works on as before.
void restrict_to_owner(const std::filesystem::path& file);

} // namespace arbor::store
