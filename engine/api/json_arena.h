// Storage for the arrays and objects of a parsed JSON document, taken from a few large
// blocks instead of one heap allocation per container: a 4 MiB body nested to the depth
// limit holds about a million one-element containers, and allocating and freeing each one
// cost more than reading the text.
//
// Ownership: every container whose storage came from an arena holds a reference to it,
// so a subtree moved out of its document keeps working after the document is gone; the
// last reference frees the blocks (keeping a small part alive keeps the whole arena).
// Thread safety: only the parse that made an arena allocates from it; it seals the arena
// before anyone else sees the tree, after which every allocation goes to the heap. So two
// values of one document may be changed on two threads like any two values, and the
// reference count is atomic for the same reason.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

namespace arbor::api {

class JsonArena {
public:
    // A new arena with one reference, which the caller owns.
    static JsonArena* create();

    JsonArena(const JsonArena&) = delete;
    JsonArena& operator=(const JsonArena&) = delete;

    void retain() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }

    // `bytes` aligned to `align` (a power of two up to alignof(std::max_align_t)), or
    // nullptr once sealed: the caller then uses the heap.
    void* allocate(size_t bytes, size_t align);
    // Whether `p` lies in one of the blocks (memory that is never freed on its own).
    bool owns(const void* p) const noexcept;
    // Ends allocation from the arena; called once the parse has built its tree.
    void seal() noexcept { sealed_ = true; }

    // The bytes of all blocks (for tests and measurements).
    size_t reserved_bytes() const noexcept;

private:
    JsonArena() = default;
    ~JsonArena();

    struct Block {
        std::unique_ptr<std::byte[]> data;
        size_t size;
    };
    void add_block(size_t at_least);

    std::atomic<size_t> refs_{1};
    bool sealed_ = false;
    std::vector<Block> blocks_;  // ordered by address, for owns()
    std::byte* cursor_ = nullptr;  // free space of the newest block: [cursor_, end_)
    std::byte* end_ = nullptr;
};

// The allocator of Json's arrays and objects: from its arena when it has one that is still
// open, else from the heap. A default-constructed one (every container built by code
// rather than by the parser) always uses the heap, and so does a copy of a container
// (select_on_container_copy_construction), so only parsed trees share an arena.
// Moving or swapping a container moves its allocator along with its storage.
template <class T>
class JsonAllocator {
public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::false_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;

    JsonAllocator() noexcept = default;
    // Shares `arena` (null: the heap).
    explicit JsonAllocator(JsonArena* arena) noexcept : arena_(arena) {
        if (arena_) arena_->retain();
    }
    // Owns a new arena (see JsonArena::create).
    static JsonAllocator with_new_arena() {
        JsonAllocator allocator;
        allocator.arena_ = JsonArena::create();  // adopts its one reference
        return allocator;
    }
    JsonAllocator(const JsonAllocator& other) noexcept : JsonAllocator(other.arena_) {}
    template <class U>
    JsonAllocator(const JsonAllocator<U>& other) noexcept : JsonAllocator(other.arena()) {}
    JsonAllocator& operator=(const JsonAllocator& other) noexcept {
        JsonAllocator copy(other);
        std::swap(arena_, copy.arena_);
        return *this;
    }
    ~JsonAllocator() {
        if (arena_) arena_->release();
    }

    T* allocate(size_t n) {
        if (arena_)
            if (void* p = arena_->allocate(n * sizeof(T), alignof(T))) return static_cast<T*>(p);
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, size_t n) noexcept {
        if (arena_ && arena_->owns(p)) return;  // freed with the arena
        std::allocator<T>().deallocate(p, n);
    }

    JsonAllocator select_on_container_copy_construction() const noexcept { return JsonAllocator(); }
    JsonArena* arena() const noexcept { return arena_; }

    // Equal when each can free what the other allocated: the same arena, or both none.
    template <class U>
    bool operator==(const JsonAllocator<U>& other) const noexcept {
        return arena_ == other.arena();
    }

private:
    JsonArena* arena_ = nullptr;
};

} // namespace arbor::api
