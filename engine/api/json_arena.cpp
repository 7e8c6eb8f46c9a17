// JsonArena: bump allocation from blocks of one size, which outlive their arena in a
// process-wide spare list.
#include "api/json_arena.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace arbor::api {
namespace {

// Every block has this size, except one made for a single larger request (an array of
// tens of thousands of members), which is freed with its arena.
constexpr size_t kBlockBytes = 1u << 20;
// Blocks kept for later arenas: enough for the tree of any 4 MiB body (the API's limit).
constexpr size_t kMaxSpareBlocks = 64;

// The blocks of arenas that are gone, for the next ones: a fresh block costs a page fault
// per 4 KiB on first touch (the kernel zeroes each page), which made a tree of a million
// small containers slower to build than allocating each container on its own.
class SpareBlocks {
public:
    std::unique_ptr<std::byte[]> take() {
        {
            std::lock_guard lock(mutex_);
            if (!blocks_.empty()) {
                std::unique_ptr<std::byte[]> block = std::move(blocks_.back());
                blocks_.pop_back();
                return block;
            }
        }
        return std::make_unique_for_overwrite<std::byte[]>(kBlockBytes);
    }
    void give_back(std::unique_ptr<std::byte[]> block) {
        std::lock_guard lock(mutex_);
        if (blocks_.size() < kMaxSpareBlocks) blocks_.push_back(std::move(block));
    }

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<std::byte[]>> blocks_;
};

SpareBlocks& spare_blocks() {
    static SpareBlocks spare;
    return spare;
}

} // namespace

JsonArena* JsonArena::create() { return new JsonArena(); }

JsonArena::~JsonArena() {
    for (Block& block : blocks_)
        if (block.size == kBlockBytes) spare_blocks().give_back(std::move(block.data));
}

void* JsonArena::allocate(size_t bytes, size_t align) {
    if (sealed_) return nullptr;
    const auto aligned = [&] {
        const auto at = reinterpret_cast<uintptr_t>(cursor_);
        return reinterpret_cast<std::byte*>((at + align - 1) & ~uintptr_t(align - 1));
    };
    std::byte* p = aligned();
    if (!cursor_ || size_t(end_ - cursor_) < bytes + size_t(p - cursor_)) {
        add_block(bytes);
        p = cursor_;  // a block's start is aligned for any type
    }
    cursor_ = p + bytes;
    return p;
}

void JsonArena::add_block(size_t at_least) {
    Block block = at_least <= kBlockBytes
                      ? Block{spare_blocks().take(), kBlockBytes}
                      : Block{std::make_unique_for_overwrite<std::byte[]>(at_least), at_least};
    cursor_ = block.data.get();
    end_ = cursor_ + block.size;
    const auto at = std::upper_bound(blocks_.begin(), blocks_.end(), cursor_, [](const std::byte* p, const Block& b) {
        return std::less<>()(p, b.data.get());
    });
    blocks_.insert(at, std::move(block));
}

bool JsonArena::owns(const void* p) const noexcept {
    // The last block starting at or before p is the only one that can hold it.
    const auto* b = static_cast<const std::byte*>(p);
    auto after = std::upper_bound(blocks_.begin(), blocks_.end(), b, [](const std::byte* q, const Block& block) {
        return std::less<>()(q, block.data.get());
    });
    if (after == blocks_.begin()) return false;
    const Block& block = *(after - 1);
    return std::less<>()(b, block.data.get() + block.size);
}

size_t JsonArena::reserved_bytes() const noexcept {
    size_t total = 0;
    for (const Block& block : blocks_) total += block.size;
    return total;
}

} // namespace arbor::api
