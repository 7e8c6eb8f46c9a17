// Moves KV pages between the engine and a DiskStore beside the engine loop: a writer
// thread drains a bounded queue of evicted pages (their bytes already copied out of the
// pool, so the pages can be reused at once), and a loader thread reads the pages a
// request asked for and hands them back one by one for the loop to put into its pages.
// Backend-free: pages travel as bytes.
#pragma once

#include "kv/disk_store.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

namespace arbor::kv {

struct DiskPageRef {
    PageKey key, parent;
    std::vector<int32_t> tokens;
};

// One page read for a load: `ok` false when it was missing or unusable (the load stops
// there: later pages of the same load are not read).
struct LoadedPage {
    uint64_t ticket = 0;
    size_t index = 0;  // position in the load's page list
    bool ok = false;
    bool last = false;  // no further result comes for this ticket
    std::vector<std::byte> bytes;
};

struct DiskTierCounters {
    uint64_t spills_dropped = 0;  // evicted pages not written because the queue was full
    uint64_t spills_queued = 0;
};

class DiskTier {
public:
    // max_queued_bytes bounds the spill queue; on_loaded is called (on the loader thread)
    // whenever a page is ready for take_loaded().
    DiskTier(std::unique_ptr<DiskStore> store, size_t max_queued_bytes, std::function<void()> on_loaded);
    ~DiskTier();  // writes what is queued, then stops both threads
    DiskTier(const DiskTier&) = delete;
    DiskTier& operator=(const DiskTier&) = delete;

    DiskStore& store() { return *store_; }

    // Queues a page for writing. With wait_for_room (shutdown flush) it blocks while the
    // queue is full, else a full queue drops the page (returns false).
    bool spill(DiskPageRef page, std::vector<std::byte> bytes, bool wait_for_room = false);
    // Blocks until every queued page is written.
    void flush();

    // Pages of pages[0..) that the store holds in order, stopping at the first gap.
    size_t available(const std::vector<DiskPageRef>& pages) const;
    void load(uint64_t ticket, std::vector<DiskPageRef> pages);
    // Results not yet read of a load nobody waits for are dropped.
    void cancel(uint64_t ticket);
    std::vector<LoadedPage> take_loaded();
    DiskTierCounters counters() const;

private:
    struct Spill {
        DiskPageRef page;
        std::vector<std::byte> bytes;
    };
    struct Load {
        uint64_t ticket;
        std::vector<DiskPageRef> pages;
    };
    void write_loop();
    void load_loop();

    std::unique_ptr<DiskStore> store_;
    size_t max_queued_bytes_;
    std::function<void()> on_loaded_;

    mutable std::mutex mutex_;
    std::condition_variable spill_cv_, spill_room_, load_cv_;
    std::deque<Spill> spills_;
    size_t queued_bytes_ = 0;
    bool writing_ = false;  // the writer holds a page taken off the queue
    std::deque<Load> loads_;
    uint64_t loading_ = 0;                   // ticket the loader works on (tickets start at 1)
    std::unordered_set<uint64_t> cancelled_;  // only ever the one being loaded
    std::vector<LoadedPage> loaded_;
    bool stop_ = false;
    DiskTierCounters counters_;
    std::thread writer_, loader_;
};

} // namespace arbor::kv
