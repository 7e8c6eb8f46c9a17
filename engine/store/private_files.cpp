#include "store/private_files.h"

#include "arbor/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace arbor::store {

namespace fs = std::filesystem;

void restrict_to_owner(const fs::path& file) {
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0 || S_ISLNK(st.st_mode) || (st.st_mode & 077) == 0) return;
    if (::chmod(file.c_str(), st.st_mode & 07700) != 0)
        spdlog::warn("store: cannot make {} private to its owner: {}", file.string(), std::strerror(errno));
}

void make_private_dir(const fs::path& dir, bool tighten) {
    std::vector<fs::path> missing;  // deepest first
    std::error_code ec;
    for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
            throw StoreError(StoreError::Kind::other, "cannot create the directory " + it->string() +
                                                          " for the database: " + std::strerror(errno));
    }
    if (tighten && missing.empty()) restrict_to_owner(dir);
}

void make_private_file(const fs::path& file) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::close(fd);
        return;
    }
    restrict_to_owner(file);  // it existed (or cannot be created: SQLite will say why)
}

} // namespace arbor::store
