// Direct SQLite access for the store tests, to check what the Store wrote without
// going through it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace arbor::test {

// The first column of the first row of `sql` as text ("" when there is no row).
// Throws std::runtime_error when SQLite fails.
std::string raw_scalar(const std::filesystem::path& file, const std::string& sql);
// The blob in the first column of the first row of `sql`.
std::vector<unsigned char> raw_blob(const std::filesystem::path& file, const std::string& sql);
void raw_exec(const std::filesystem::path& file, const std::string& sql);
// "ok" for a healthy file, else SQLite's first complaint or error message. Read-only, so
// it leaves a WAL file as it found it.
std::string raw_quick_check(const std::filesystem::path& file);

std::vector<char> read_bytes(const std::filesystem::path& file);

} // namespace arbor::test
