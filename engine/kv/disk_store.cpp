#include "kv/disk_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace arbor::kv {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'A', 'R', 'B', 'O', 'R', 'K', 'V', '\n'};
constexpr const char* kPageSuffix = ".kvp";
constexpr const char* kTempSuffix = ".tmp";

// Fixed little-endian-host layout; kMagic's last byte and the version catch other writers.
struct FileHeader {
    char magic[8];
    uint32_t version;
    uint32_t kv_type;
    uint32_t page_size;
    uint32_t n_tokens;
    uint64_t page_bytes;
    PageKey model, key, parent;
};
static_assert(sizeof(FileHeader) == 80);

// Streaming 64-bit checksum over 8-byte words (a byte tail is zero-padded); position
// dependent, so swapped words change it.
class Checksum {
public:
    void add(const void* data, size_t n) {
        const auto* p = static_cast<const unsigned char*>(data);
        while (n > 0) {
            const size_t take = std::min(n, size_t(8) - fill_);
            std::memcpy(buf_ + fill_, p, take);
            fill_ += take;
            p += take;
            n -= take;
            if (fill_ == 8) flush();
        }
    }
    uint64_t value() {
        if (fill_ > 0) {
            std::memset(buf_ + fill_, 0, 8 - fill_);
            flush();
        }
        return page_key_detail::mix(h_ ^ count_);
    }

private:
    void flush() {
        uint64_t w;
        std::memcpy(&w, buf_, 8);
        h_ = (h_ ^ w) * 0x100000001b3ull;
        h_ = (h_ << 29) | (h_ >> 35);
        ++count_;
        fill_ = 0;
    }
    uint64_t h_ = 0xcbf29ce484222325ull, count_ = 0;
    unsigned char buf_[8];
    size_t fill_ = 0;
};

bool parse_key(const std::string& hex, PageKey& key) {
    if (hex.size() != 32 || !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit((unsigned char)c); }))
        return false;
    key.hi = std::stoull(hex.substr(0, 16), nullptr, 16);
    key.lo = std::stoull(hex.substr(16), nullptr, 16);
    return true;
}

bool write_all(int fd, const void* data, size_t n) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= size_t(w);
    }
    return true;
}

bool read_all(int fd, void* data, size_t n) {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
        const ssize_t r = ::read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= size_t(r);
    }
    return true;
}

// A temporary file named <key>.<pid>.<serial>.tmp whose writer is gone.
bool orphan_temp(const fs::path& path) {
    const std::string name = path.filename().string();
    const size_t first = name.find('.');
    const size_t second = first == std::string::npos ? first : name.find('.', first + 1);
    if (second == std::string::npos) return true;
    const long pid = std::strtol(name.c_str() + first + 1, nullptr, 10);
    return pid <= 0 || (::kill(pid_t(pid), 0) != 0 && errno == ESRCH);
}

} // namespace

DiskStore::DiskStore(fs::path root, DiskFormat format, uint64_t budget_bytes)
    : root_(std::move(root)), format_(format), budget_(budget_bytes) {
    const uint64_t words[4] = {kDiskFormatVersion, format.kv_type, format.page_size, format.page_bytes};
    dir_ = root_ / chain_key(format.model, std::span<const uint64_t>(words, 4)).hex();
    std::lock_guard lock(mutex_);
    if (budget_ < file_bytes(format.page_size)) {
        disabled_ = "the disk budget of " + std::to_string(budget_) + " bytes holds no page of " +
                    std::to_string(file_bytes(format.page_size)) + " bytes";
        return;
    }
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) {
        disable("cannot create " + dir_.string() + ": " + ec.message());
        return;
    }
    const fs::path probe = dir_ / (".probe." + std::to_string(::getpid()) + kTempSuffix);
    const int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        disable("cannot write in " + dir_.string() + ": " + std::strerror(errno));
        return;
    }
    ::close(fd);
    ::unlink(probe.c_str());
    scan();
    make_room(0);
}

uint64_t DiskStore::file_bytes(size_t n_tokens) const {
    return sizeof(FileHeader) + n_tokens * sizeof(int32_t) + format_.page_bytes + sizeof(uint64_t);
}

fs::path DiskStore::path_of(const PageKey& key) const { return dir_ / (key.hex() + kPageSuffix); }

void DiskStore::scan() {
    struct Found {
        fs::file_time_type used;
        PageKey key;
        uint64_t bytes;
    };
    std::vector<Found> own;
    std::vector<std::pair<fs::file_time_type, Foreign>> foreign;
    std::error_code ec;
    for (auto dir = fs::directory_iterator(root_, ec); !ec && dir != fs::directory_iterator(); dir.increment(ec)) {
        if (!dir->is_directory(ec)) continue;
        const bool mine = dir->path() == dir_;
        for (auto it = fs::directory_iterator(dir->path(), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
            std::error_code fe;
            if (!it->is_regular_file(fe)) continue;
            const fs::path& path = it->path();
            const uint64_t bytes = it->file_size(fe);
            const auto used = it->last_write_time(fe);
            if (fe) continue;
            if (path.extension() == kTempSuffix) {
                if (orphan_temp(path)) fs::remove(path, fe);  // a write killed midway
                continue;
            }
            PageKey key;
            if (mine && path.extension() == kPageSuffix && parse_key(path.stem().string(), key))
                own.push_back({used, key, bytes});
            else if (!mine)
                foreign.push_back({used, Foreign{path, bytes}});
        }
    }
    std::sort(own.begin(), own.end(), [](const Found& a, const Found& b) { return a.used < b.used; });
    for (const Found& f : own) {
        lru_.push_back(f.key);
        index_[f.key] = Entry{f.bytes, std::prev(lru_.end())};
        own_bytes_ += f.bytes;
    }
    std::sort(foreign.begin(), foreign.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [t, f] : foreign) {
        foreign_bytes_ += f.bytes;
        foreign_.push_back(std::move(f));
    }
}

void DiskStore::disable(const std::string& why) {
    if (!disabled_.empty()) return;
    disabled_ = why;
    spdlog::warn("KV disk tier off: {}", why);
}

bool DiskStore::enabled() const {
    std::lock_guard lock(mutex_);
    return disabled_.empty();
}

std::string DiskStore::disabled_reason() const {
    std::lock_guard lock(mutex_);
    return disabled_;
}

bool DiskStore::contains(const PageKey& key) const {
    std::lock_guard lock(mutex_);
    return disabled_.empty() && index_.contains(key);
}

void DiskStore::forget(const PageKey& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return;
    // The path first: `key` may be the LRU list's own element, erased below.
    const std::string path = path_of(key);
    own_bytes_ -= it->second.bytes;
    lru_.erase(it->second.lru);
    index_.erase(it);
    ::unlink(path.c_str());
}

void DiskStore::make_room(uint64_t bytes) {
    while (own_bytes_ + foreign_bytes_ + bytes > budget_ && !foreign_.empty()) {
        std::error_code ec;
        fs::remove(foreign_.front().path, ec);
        foreign_bytes_ -= foreign_.front().bytes;
        foreign_.erase(foreign_.begin());
        ++counters_.evicted;
    }
    while (own_bytes_ + foreign_bytes_ + bytes > budget_ && !lru_.empty()) {
        forget(lru_.front());
        ++counters_.evicted;
    }
}

bool DiskStore::put(const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens,
                    std::span<const std::byte> bytes) {
    if (bytes.size() != format_.page_bytes || tokens.size() != format_.page_size)
        throw std::invalid_argument("disk store: a page has " + std::to_string(format_.page_size) + " tokens and " +
                                    std::to_string(format_.page_bytes) + " bytes, got " +
                                    std::to_string(tokens.size()) + " and " + std::to_string(bytes.size()));
    fs::path temp;
    {
        std::lock_guard lock(mutex_);
        if (!disabled_.empty() || index_.contains(key)) return false;
        temp = dir_ / (key.hex() + "." + std::to_string(::getpid()) + "." + std::to_string(temp_serial_++) + kTempSuffix);
    }
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kDiskFormatVersion;
    h.kv_type = format_.kv_type;
    h.page_size = format_.page_size;
    h.n_tokens = uint32_t(tokens.size());
    h.page_bytes = format_.page_bytes;
    h.model = format_.model;
    h.key = key;
    h.parent = parent;
    Checksum sum;
    sum.add(&h, sizeof h);
    sum.add(tokens.data(), tokens.size_bytes());
    sum.add(bytes.data(), bytes.size());
    const uint64_t check = sum.value();

    const int fd = ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write_all(fd, &h, sizeof h) && write_all(fd, tokens.data(), tokens.size_bytes()) &&
              write_all(fd, bytes.data(), bytes.size()) && write_all(fd, &check, sizeof check);
    const int err = errno;
    if (fd >= 0 && ::close(fd) != 0) ok = false;
    std::lock_guard lock(mutex_);
    if (ok) {
        make_room(file_bytes(tokens.size()));
        if (::rename(temp.c_str(), path_of(key).c_str()) == 0) {
            lru_.push_back(key);
            index_[key] = Entry{file_bytes(tokens.size()), std::prev(lru_.end())};
            own_bytes_ += file_bytes(tokens.size());
            ++counters_.written;
            return true;
        }
    }
    ::unlink(temp.c_str());
    if (err == ENOENT) return false;  // the directory was removed under us: try again later
    disable("cannot write " + temp.string() + ": " + std::strerror(ok ? errno : err));
    return false;
}

void DiskStore::reject(const PageKey& key, const std::string& why) {
    spdlog::debug("KV disk tier: page {} rejected: {}", key.hex(), why);
    std::lock_guard lock(mutex_);
    ++counters_.rejected;
    forget(key);
}

bool DiskStore::get(const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens, std::span<std::byte> out) {
    if (out.size() != format_.page_bytes) return false;
    {
        std::lock_guard lock(mutex_);
        if (!disabled_.empty() || !index_.contains(key)) return false;
    }
    const fs::path path = path_of(key);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        reject(key, "missing");
        return false;
    }
    FileHeader h{};
    std::vector<int32_t> stored;
    uint64_t check = 0;
    bool ok = read_all(fd, &h, sizeof h) && std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 &&
              h.version == kDiskFormatVersion && h.kv_type == format_.kv_type && h.page_size == format_.page_size &&
              h.page_bytes == format_.page_bytes && h.model == format_.model && h.key == key && h.parent == parent &&
              h.n_tokens == tokens.size();
    if (ok) {
        stored.resize(h.n_tokens);
        ok = read_all(fd, stored.data(), stored.size() * sizeof(int32_t)) &&
             std::equal(stored.begin(), stored.end(), tokens.begin(), tokens.end()) &&
             read_all(fd, out.data(), out.size()) && read_all(fd, &check, sizeof check);
    }
    char extra;
    ok = ok && ::read(fd, &extra, 1) == 0;  // nothing may follow the checksum
    ::close(fd);
    if (ok) {
        Checksum sum;
        sum.add(&h, sizeof h);
        sum.add(stored.data(), stored.size() * sizeof(int32_t));
        sum.add(out.data(), out.size());
        ok = sum.value() == check;
    }
    if (!ok) {
        reject(key, "damaged, foreign or for other tokens");
        return false;
    }
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // the LRU order outlives the process
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(key); it != index_.end()) lru_.splice(lru_.end(), lru_, it->second.lru);
    ++counters_.read;
    return true;
}

size_t DiskStore::pages() const {
    std::lock_guard lock(mutex_);
    return index_.size();
}

uint64_t DiskStore::bytes_used() const {
    std::lock_guard lock(mutex_);
    return own_bytes_ + foreign_bytes_;
}

DiskStoreCounters DiskStore::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

void DiskStore::check_invariants() const {
    auto fail = [](const std::string& what) { throw std::logic_error("disk store invariant: " + what); };
    std::lock_guard lock(mutex_);
    if (lru_.size() != index_.size()) fail("LRU list and index differ in size");
    uint64_t own = 0;
    for (const auto& [key, entry] : index_) {
        if (*entry.lru != key) fail("page " + key.hex() + " has a stale LRU position");
        // Sizes are not compared: damage done from outside (a truncated file) is found
        // when the page is read, and until then the index counts the size written.
        std::error_code ec;
        if (!fs::is_regular_file(path_of(key), ec)) fail("indexed page " + key.hex() + " has no file");
        own += entry.bytes;
    }
    if (own != own_bytes_) fail("indexed bytes add up to " + std::to_string(own) + ", counted " + std::to_string(own_bytes_));
    uint64_t foreign = 0;
    for (const Foreign& f : foreign_) foreign += f.bytes;
    if (foreign != foreign_bytes_) fail("other formats' bytes do not add up");
    if (own_bytes_ + foreign_bytes_ > budget_) fail("store uses " + std::to_string(own_bytes_ + foreign_bytes_) +
                                                    " bytes over a budget of " + std::to_string(budget_));
    if (!disabled_.empty()) return;
    std::error_code ec;
    for (auto it = fs::directory_iterator(dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        PageKey key;
        if (it->path().extension() == kPageSuffix &&
            (!parse_key(it->path().stem().string(), key) || !index_.contains(key)))
            fail("page file " + it->path().filename().string() + " is not indexed");
    }
}

} // namespace arbor::kv
