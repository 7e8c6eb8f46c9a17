#include "api/namespace_key.h"

#include "arbor/error.h"
#include "arbor/private_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace arbor::api {
namespace {

namespace fs = std::filesystem;

constexpr size_t kHexDigits = 32;
constexpr size_t kFileBytes = kHexDigits + 1;  // and a newline

std::string to_file_text(const NamespaceKey& key) {
    static const char digits[] = "0123456789abcdef";
    std::string text;
    for (uint64_t word : key)
        for (int shift = 60; shift >= 0; shift -= 4) text.push_back(digits[(word >> shift) & 0xf]);
    text.push_back('\n');
    return text;
}

std::optional<NamespaceKey> from_file_text(std::string_view text) {
    if (text.size() != kFileBytes || text.back() != '\n') return std::nullopt;
    NamespaceKey key{};
    for (size_t i = 0; i < kHexDigits; ++i) {
        const char c = text[i];
        const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return std::nullopt;
        key[i / 16] = key[i / 16] << 4 | uint64_t(v);
    }
    return key;
}

struct ReadResult {
    std::optional<NamespaceKey> key;
    bool missing = false;
    std::string problem;  // why the file is not a usable key (not missing)
};

ReadResult read_key(const fs::path& file) {
    // O_NONBLOCK: a FIFO put there must not hang the server; O_NOFOLLOW: a link is not ours.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return {.missing = true};
        return {.problem = std::string("cannot be read (") + std::strerror(errno) + ")"};
    }
    ReadResult r;
    struct stat st{};
    char buf[kFileBytes + 1];
    ssize_t n = -1;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) r.problem = "is not a regular file";
    else if (st.st_uid != ::geteuid()) r.problem = "belongs to another user";
    else if ((st.st_mode & 077) != 0) r.problem = "is readable or writable by other users";
    else if ((n = ::read(fd, buf, sizeof buf)) < 0) r.problem = std::string("cannot be read (") + std::strerror(errno) + ")";
    else if (!(r.key = from_file_text(std::string_view(buf, size_t(n))))) r.problem = "does not hold a key";
    ::close(fd);
    return r;
}

} // namespace

NamespaceKey random_namespace_key() {
    std::random_device rd;
    NamespaceKey key;
    for (auto& k : key) k = (uint64_t(rd()) << 32) ^ rd();
    return key;
}

LoadedNamespaceKey load_or_create_namespace_key(const fs::path& file) {
    const std::string name = "the API's cache namespace key " + file.string();
    ReadResult existing = read_key(file);
    if (existing.key) return {*existing.key, true, {}};

    LoadedNamespaceKey out{random_namespace_key(), false, {}};
    std::string problem = existing.problem;
    if (!problem.empty()) out.warning = name + " " + problem + "; a new key replaces it (clients' cached pages from earlier runs are not found)";
    const char* const this_run_only = "; a key for this run only (clients' cached pages are not found after a restart)";
    try {
        std::error_code ec;
        fs::create_directories(file.parent_path(), ec);  // if this fails, the write says why
        // Where there was no file, one is only created, never replaced: of servers starting
        // at once, the first key stored wins and the others read it.
        if (write_private_file(file, to_file_text(out.key),
                               existing.missing ? ExistingFile::Keep : ExistingFile::Replace))
            return out;
        if (ReadResult raced = read_key(file); raced.key) return {*raced.key, true, {}};
        out.warning = name + " appeared meanwhile and does not hold a key" + this_run_only;
    } catch (const Error& e) {
        out.warning = name + (problem.empty() ? "" : " " + problem + " and") + " cannot be stored (" + e.what() + ")" +
                      this_run_only;
    }
    return out;
}

} // namespace arbor::api
