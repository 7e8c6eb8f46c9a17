#include "kv/disk_tier.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace arbor::kv {

namespace {
// Loaded pages waiting for the loop: beyond this the loader waits (bounds memory).
constexpr size_t kMaxLoadedWaiting = 16;
} // namespace

DiskTier::DiskTier(std::unique_ptr<DiskStore> store, size_t max_queued_bytes, std::function<void()> on_loaded)
    : store_(std::move(store)), max_queued_bytes_(max_queued_bytes), on_loaded_(std::move(on_loaded)) {
    writer_ = std::thread([this] { write_loop(); });
    loader_ = std::thread([this] { load_loop(); });
}

DiskTier::~DiskTier() {
    flush();
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    spill_cv_.notify_all();
    spill_room_.notify_all();
    load_cv_.notify_all();
    writer_.join();
    loader_.join();
}

bool DiskTier::spill(DiskPageRef page, std::vector<std::byte> bytes, bool wait_for_room) {
    std::unique_lock lock(mutex_);
    if (wait_for_room)
        spill_room_.wait(lock, [&] { return stop_ || queued_bytes_ == 0 || queued_bytes_ + bytes.size() <= max_queued_bytes_; });
    else if (queued_bytes_ > 0 && queued_bytes_ + bytes.size() > max_queued_bytes_) {
        ++counters_.spills_dropped;
        return false;
    }
    if (stop_) return false;
    queued_bytes_ += bytes.size();
    ++counters_.spills_queued;
    spills_.push_back(Spill{std::move(page), std::move(bytes)});
    spill_cv_.notify_one();
    return true;
}

void DiskTier::flush() {
    std::unique_lock lock(mutex_);
    spill_room_.wait(lock, [&] { return spills_.empty() && !writing_; });
}

void DiskTier::write_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        spill_cv_.wait(lock, [&] { return stop_ || !spills_.empty(); });
        if (spills_.empty()) return;  // stop_ with nothing left
        Spill s = std::move(spills_.front());
        spills_.pop_front();
        writing_ = true;
        lock.unlock();
        try {
            store_->put(s.page.key, s.page.parent, s.page.tokens, s.bytes);
        } catch (const std::exception& e) {
            spdlog::error("KV disk tier: writing a page failed: {}", e.what());
        }
        lock.lock();
        writing_ = false;
        queued_bytes_ -= s.bytes.size();
        spill_room_.notify_all();
    }
}

size_t DiskTier::available(const std::vector<DiskPageRef>& pages) const {
    size_t n = 0;
    while (n < pages.size() && store_->contains(pages[n].key)) ++n;
    return n;
}

void DiskTier::load(uint64_t ticket, std::vector<DiskPageRef> pages) {
    std::lock_guard lock(mutex_);
    loads_.push_back(Load{ticket, std::move(pages)});
    load_cv_.notify_one();
}

void DiskTier::cancel(uint64_t ticket) {
    std::lock_guard lock(mutex_);
    std::erase_if(loads_, [&](const Load& l) { return l.ticket == ticket; });
    if (loading_ == ticket) cancelled_.insert(ticket);
    std::erase_if(loaded_, [&](const LoadedPage& p) { return p.ticket == ticket; });
    load_cv_.notify_all();
}

std::vector<LoadedPage> DiskTier::take_loaded() {
    std::vector<LoadedPage> out;
    {
        std::lock_guard lock(mutex_);
        out.swap(loaded_);
    }
    load_cv_.notify_all();
    return out;
}

DiskTierCounters DiskTier::counters() const {
    std::lock_guard lock(mutex_);
    return counters_;
}

void DiskTier::load_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        load_cv_.wait(lock, [&] { return stop_ || !loads_.empty(); });
        if (stop_) return;
        Load job = std::move(loads_.front());
        loads_.pop_front();
        loading_ = job.ticket;
        for (size_t i = 0; i < job.pages.size(); ++i) {
            load_cv_.wait(lock, [&] { return stop_ || cancelled_.contains(job.ticket) || loaded_.size() < kMaxLoadedWaiting; });
            if (stop_) return;
            if (cancelled_.contains(job.ticket)) break;
            lock.unlock();
            LoadedPage page;
            page.ticket = job.ticket;
            page.index = i;
            page.bytes.resize(store_->format().page_bytes);
            const DiskPageRef& ref = job.pages[i];
            try {
                page.ok = store_->get(ref.key, ref.parent, ref.tokens, page.bytes);
            } catch (const std::exception& e) {
                spdlog::error("KV disk tier: reading a page failed: {}", e.what());
            }
            page.last = !page.ok || i + 1 == job.pages.size();
            if (!page.ok) page.bytes.clear();
            const bool last = page.last;
            lock.lock();
            if (cancelled_.contains(job.ticket)) break;
            loaded_.push_back(std::move(page));
            lock.unlock();
            if (on_loaded_) on_loaded_();
            lock.lock();
            if (last) break;
        }
        cancelled_.erase(job.ticket);
        loading_ = 0;
    }
}

} // namespace arbor::kv
