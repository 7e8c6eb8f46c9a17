// The disk tier's files: whole KV pages, content-addressed (page_key.h), one file per
// page under <root>/<format>/<key>.kvp, where <format> hashes the model fingerprint,
// the KV element type, the page size, the bytes per page and kDiskFormatVersion (so a
// page is only ever read back by an engine that lays pages out the same way).
// A file holds a header (format, key, parent key), the page's token ids, the page's K/V
// bytes as the backend gave them, and a checksum of all that. A page is used only when
// its header, token ids and parent key equal the ones asked for and the checksum holds;
// any other file met there is deleted. Files are written to a temporary name and
// renamed, so a kill at any moment leaves whole pages only (leftover temporaries are
// deleted at open).
//
// Budget: every file under root counts (other models' and formats' too). Room is made
// by deleting other formats' files first, then this format's least recently used pages
// (use is kept in the files' modification times, so it survives a restart).
// A directory that cannot be created or written, or a full disk, turns the store off
// with one warning; later calls then do nothing.
//
// Thread-safe: the spill writer, the loader and the engine loop share one store.
#pragma once

#include "kv/page_key.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <list>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace arbor::kv {

inline constexpr uint32_t kDiskFormatVersion = 1;

// What makes two engines' pages interchangeable.
struct DiskFormat {
    PageKey model;            // fingerprint of the weights and architecture
    uint32_t kv_type = 0;     // the backend's KV element type, as a number
    uint32_t page_size = 0;   // tokens per page
    uint64_t page_bytes = 0;  // bytes of one page's K/V
};

struct DiskStoreCounters {
    uint64_t written = 0;        // pages written
    uint64_t read = 0;           // pages read and verified
    uint64_t rejected = 0;       // files found damaged, foreign or not matching, and deleted
    uint64_t evicted = 0;        // files deleted for room
};

class DiskStore {
public:
    // Opens (creating it when missing) root/<format>. budget_bytes must be at least one
    // page file, else the store is off.
    DiskStore(std::filesystem::path root, DiskFormat format, uint64_t budget_bytes);

    bool enabled() const;
    std::string disabled_reason() const;
    const std::filesystem::path& dir() const { return dir_; }
    const DiskFormat& format() const { return format_; }
    // Size of one page's file.
    uint64_t file_bytes(size_t n_tokens) const;

    bool contains(const PageKey& key) const;
    // Writes a page unless it is there already. False when it was not written (present,
    // store off, or the write failed: the store is then off).
    bool put(const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens,
             std::span<const std::byte> bytes);
    // Reads the page into out (format().page_bytes) when its file exists and matches key,
    // parent and tokens exactly and its checksum holds; marks it used. A file that does
    // not is deleted. False when no usable page was read.
    bool get(const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens, std::span<std::byte> out);

    size_t pages() const;
    uint64_t bytes_used() const;  // every file under root that the budget counts
    uint64_t budget() const { return budget_; }
    DiskStoreCounters counters() const;

    // Throws std::logic_error on the first disagreement between the index and the
    // directory: an indexed page without its file, a page file not
    // indexed, byte totals that do not add up, or use over the budget.
    void check_invariants() const;

private:
    struct Entry {
        uint64_t bytes = 0;
        std::list<PageKey>::iterator lru;  // position in lru_ (front: least recently used)
    };
    struct Foreign {
        std::filesystem::path path;
        uint64_t bytes = 0;
    };

    std::filesystem::path path_of(const PageKey& key) const;
    void scan();
    void disable(const std::string& why);  // caller holds mutex_
    void make_room(uint64_t bytes);        // caller holds mutex_
    void forget(const PageKey& key);       // caller holds mutex_; deletes the file too
    void reject(const PageKey& key, const std::string& why);

    std::filesystem::path root_, dir_;
    DiskFormat format_;
    uint64_t budget_;
    mutable std::mutex mutex_;
    std::string disabled_;
    std::unordered_map<PageKey, Entry, PageKeyHash> index_;
    std::list<PageKey> lru_;
    std::vector<Foreign> foreign_;  // oldest first
    uint64_t own_bytes_ = 0, foreign_bytes_ = 0;
    uint64_t temp_serial_ = 0;
    DiskStoreCounters counters_;
};

} // namespace arbor::kv
