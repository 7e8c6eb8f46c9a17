#include "api/namespace_key.h"

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

// Writes the key to a temporary file beside `file` (0600 from its creation); its path,
// or an empty one with *error set.
fs::path write_temporary(const fs::path& file, const NamespaceKey& key, std::string* error) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    const std::string text = to_file_text(key);
    const fs::path temp = file.parent_path() / (file.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                                                to_file_text(random_namespace_key()).substr(0, 8));
    const int fd = ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        *error = std::string("cannot be written (") + std::strerror(errno) + ")";
        return {};
    }
    const bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) &&
                    ::fsync(fd) == 0;
    const int saved = errno;
    ::close(fd);
    if (!ok) {
        ::unlink(temp.c_str());
        *error = std::string("cannot be written (") + std::strerror(saved) + ")";
        return {};
    }
    return temp;
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
    std::string error;
    const fs::path temp = write_temporary(file, out.key, &error);
    if (temp.empty()) {
        out.warning = name + " " + error + "; a key for this run only (clients' cached pages are not found after a restart)";
        return out;
    }
    if (existing.missing) {
        // link() never replaces: of servers starting at once, the first key stored wins.
        const bool linked = ::link(temp.c_str(), file.c_str()) == 0;
        const int saved = errno;
        ::unlink(temp.c_str());
        if (linked) return out;
        if (saved == EEXIST) {
            if (ReadResult raced = read_key(file); raced.key) return {*raced.key, true, {}};
        }
        out.warning = name + " cannot be stored (" + std::strerror(saved) +
                      "); a key for this run only (clients' cached pages are not found after a restart)";
        return out;
    }
    if (::rename(temp.c_str(), file.c_str()) != 0) {
        const int saved = errno;
        ::unlink(temp.c_str());
        out.warning = name + " " + problem + " and cannot be replaced (" + std::strerror(saved) +
                      "); a key for this run only (clients' cached pages are not found after a restart)";
    }
    return out;
}

} // namespace arbor::api
