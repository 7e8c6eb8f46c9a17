// Joins the engine's backend, radix cache and scheduler to the KV disk tier, on the
// engine loop thread: copies the bytes of pages the cache evicts into the spill queue
// (skipping pages the disk already holds), tells the scheduler how far a prompt
// continues on disk, starts loads and puts the loaded bytes into the sequences' pages,
// and at shutdown queues every cached page and waits until all are written.
#pragma once

#include "arbor/backend.h"
#include "kv/disk_tier.h"
#include "kv/radix_cache.h"
#include "scheduler.h"

#include <functional>
#include <memory>
#include <unordered_map>

namespace arbor::sched {

class DiskBridge final : public DiskSource {
public:
    // Registers itself as the cache's spill hook and the scheduler's disk source.
    DiskBridge(Backend& backend, kv::RadixCache& cache, Scheduler& scheduler, std::unique_ptr<kv::DiskStore> store,
               std::function<void()> on_loaded);
    ~DiskBridge() override;

    int32_t available(const kv::PageKey& after, std::span<const int32_t> tokens) override;
    void start_load(Sequence* seq, const kv::PageKey& after) override;
    void cancel_load(Sequence* seq) override;

    // Puts the pages read since the last call into their sequences and tells the
    // scheduler of finished loads.
    void install_loaded();
    // Queues every cached page the disk lacks and waits until the queue is written.
    void flush();
    kv::DiskTier& tier() { return *tier_; }

private:
    struct InFlight {
        Sequence* seq;
        int32_t ok = 0;  // pages put in so far, in order
    };
    std::vector<kv::DiskPageRef> chain(const kv::PageKey& after, std::span<const int32_t> tokens) const;
    void spill(const kv::PageKey& key, const kv::PageKey& parent, std::span<const int32_t> tokens, int32_t page,
               bool wait_for_room);

    Backend& backend_;
    kv::RadixCache& cache_;
    Scheduler& scheduler_;
    std::unique_ptr<kv::DiskTier> tier_;
    std::unordered_map<uint64_t, InFlight> loads_;  // by ticket
};

} // namespace arbor::sched
