#include "arbor/private_file.h"

#include "arbor/error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

namespace arbor {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void failed(const char* what, const fs::path& file, int error) {
    throw Error(std::string("cannot ") + what + " " + file.string() + ": " + std::strerror(error));
}

// A name beside `file` that no other writer picks: hidden, with this process's id and a
// random part (two threads of one process may write the same file at once).
fs::path temporary_beside(const fs::path& file) {
    std::random_device rd;
    return file.parent_path() /
           ("." + file.filename().string() + "." + std::to_string(::getpid()) + "." + std::to_string(rd()) + ".tmp");
}

// Writes all of `contents` to fd and syncs it; errno is set when it returns false.
bool write_all(int fd, std::string_view contents) {
    size_t done = 0;
    while (done < contents.size()) {
        const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) {
            errno = EIO;
            return false;
        }
        done += size_t(n);
    }
    return ::fsync(fd) == 0;
}

} // namespace

bool write_private_file(const fs::path& file, std::string_view contents, ExistingFile existing) {
    const fs::path temporary = temporary_beside(file);
    // O_EXCL|O_NOFOLLOW: never write through a file or link someone else put there.
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) failed("create", temporary, errno);
    // The umask may have taken bits from 0600 (a file its owner cannot read is no use).
    bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, contents);
    int error = errno;
    if (::close(fd) != 0 && ok) {
        ok = false;
        error = errno;
    }
    if (!ok) {
        ::unlink(temporary.c_str());
        failed("write", temporary, error);
    }
    // link() never replaces an existing file; rename() replaces it atomically.
    const bool placed = existing == ExistingFile::Keep ? ::link(temporary.c_str(), file.c_str()) == 0
                                                       : ::rename(temporary.c_str(), file.c_str()) == 0;
    error = errno;
    if (existing == ExistingFile::Keep || !placed) ::unlink(temporary.c_str());
    if (placed) return true;
    if (existing == ExistingFile::Keep && error == EEXIST) return false;
    failed(existing == ExistingFile::Keep ? "create" : "replace", file, error);
}

} // namespace arbor
