#include "file_mapping.h"

#include "arbor/error.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace arbor::gguf_detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
    throw Error("cannot open GGUF file '" + path.string() + "': " + what);
}

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

} // namespace

Mapping map_file(const std::filesystem::path& path) {
    Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0) fail(path, std::strerror(errno));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) fail(path, std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail(path, "it is a directory");
    if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
    if (st.st_size == 0) fail(path, "the file is empty");
    const auto size = size_t(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (p == MAP_FAILED) fail(path, std::string("mmap failed: ") + std::strerror(errno));
    return {static_cast<const uint8_t*>(p), size};
}

void unmap_file(const Mapping& mapping) noexcept {
    if (mapping.data) ::munmap(const_cast<uint8_t*>(mapping.data), mapping.size);
}

} // namespace arbor::gguf_detail
