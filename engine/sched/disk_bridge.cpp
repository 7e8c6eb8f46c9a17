#include "disk_bridge.h"

#include <spdlog/spdlog.h>

namespace arbor::sched {

namespace {
// Evicted pages waiting to be written: beyond this an eviction is not spilled (the
// engine never waits for the disk while serving).
constexpr size_t kSpillQueueBytes = size_t(64) << 20;
} // namespace

DiskBridge::DiskBridge(Backend& backend, kv::RadixCache& cache, Scheduler& scheduler,
                       std::unique_ptr<kv::DiskStore> store, std::function<void()> on_loaded)
    : backend_(backend), cache_(cache), scheduler_(scheduler),
      tier_(std::make_unique<kv::DiskTier>(std::move(store), kSpillQueueBytes, std::move(on_loaded))) {
    cache_.set_spill([this](const kv::PageKey& key, const kv::PageKey& parent, std::span<const int32_t> tokens,
                            int32_t page) { spill(key, parent, tokens, page, false); });
    scheduler_.set_disk(this);
}

DiskBridge::~DiskBridge() {
    cache_.set_spill(nullptr);
    scheduler_.set_disk(nullptr);
}

std::vector<kv::DiskPageRef> DiskBridge::chain(const kv::PageKey& after, std::span<const int32_t> tokens) const {
    const size_t P = size_t(cache_.page_size());
    std::vector<kv::DiskPageRef> refs;
    kv::PageKey parent = after;
    for (size_t i = 0; i + P <= tokens.size(); i += P) {
        const auto chunk = tokens.subspan(i, P);
        kv::DiskPageRef ref{kv::chain_key(parent, chunk), parent, std::vector<int32_t>(chunk.begin(), chunk.end())};
        parent = ref.key;
        refs.push_back(std::move(ref));
    }
    return refs;
}

int32_t DiskBridge::available(const kv::PageKey& after, std::span<const int32_t> tokens) {
    if (!tier_->store().enabled()) return 0;
    return int32_t(tier_->available(chain(after, tokens)));
}

void DiskBridge::start_load(Sequence* seq, const kv::PageKey& after) {
    const size_t P = size_t(cache_.page_size());
    auto refs = chain(after, std::span(seq->tokens.data() + size_t(seq->load_from) * P, size_t(seq->loading) * P));
    loads_[seq->load_ticket] = InFlight{seq};
    tier_->load(seq->load_ticket, std::move(refs));
}

void DiskBridge::cancel_load(Sequence* seq) {
    tier_->cancel(seq->load_ticket);
    loads_.erase(seq->load_ticket);
}

void DiskBridge::install_loaded() {
    for (kv::LoadedPage& page : tier_->take_loaded()) {
        const auto it = loads_.find(page.ticket);
        if (it == loads_.end()) continue;  // abandoned
        InFlight& load = it->second;
        Sequence* seq = load.seq;
        bool last = page.last;
        if (page.ok && int32_t(page.index) == load.ok) {
            try {
                backend_.write_page(seq->table.pages[size_t(seq->load_from) + page.index], page.bytes);
                ++load.ok;
            } catch (const std::exception& e) {
                spdlog::error("KV disk tier: putting a page into memory failed: {}", e.what());
                last = true;
            }
        } else {
            last = true;
        }
        if (last) {
            if (!page.last) tier_->cancel(page.ticket);
            const int32_t ok = load.ok;
            loads_.erase(it);
            scheduler_.loaded(seq, page.ticket, ok);
        }
    }
}

void DiskBridge::spill(const kv::PageKey& key, const kv::PageKey& parent, std::span<const int32_t> tokens,
                       int32_t page, bool wait_for_room) {
    if (!tier_->store().enabled() || tier_->store().contains(key)) return;
    std::vector<std::byte> bytes(backend_.page_bytes());
    try {
        backend_.read_page(page, bytes);
    } catch (const std::exception& e) {
        spdlog::error("KV disk tier: reading page {} failed: {}", page, e.what());
        return;
    }
    tier_->spill(kv::DiskPageRef{key, parent, std::vector<int32_t>(tokens.begin(), tokens.end())}, std::move(bytes),
                 wait_for_room);
}

void DiskBridge::flush() {
    cache_.for_each_page([this](const kv::PageKey& key, const kv::PageKey& parent, std::span<const int32_t> tokens,
                                int32_t page) { spill(key, parent, tokens, page, true); });
    tier_->flush();
}

} // namespace arbor::sched
