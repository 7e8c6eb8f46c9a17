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

void release_pages(const uint8_t* begin, size_t bytes) noexcept {
    const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
    // Whole pages only: the partial pages at either end hold other tensors' bytes.
    const uintptr_t first = (uintptr_t(begin) + page - 1) / page * page;
    const uintptr_t end = (uintptr_t(begin) + bytes) / page * page;
    // The mapping is read-only and private, so it has no page of its own to lose: the
    // kernel drops the references to the file's pages and faults them in again on use.
    if (first < end) ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
}

} // namespace arbor::gguf_detail
