// Float storage that starts on a cache line. The kernels read rows with 32-byte loads;
// rows of a multiple of 16 floats then never straddle two cache lines, which costs an
// extra load cycle (a large std::vector sits 16 bytes past a page boundary, so every
// other load of its rows would straddle).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace arbor {

inline constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
    using value_type = T;
    CacheLineAllocator() = default;
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) {}
    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kCacheLine)));
    }
    void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kCacheLine)); }
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

// A fixed-size array left uninitialised (for large buffers the OS commits on first write).
struct CacheLineDelete {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(kCacheLine)); }
};
using AlignedFloatArray = std::unique_ptr<float[], CacheLineDelete>;
inline AlignedFloatArray make_aligned_floats_for_overwrite(std::size_t n) {
    return AlignedFloatArray(static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t(kCacheLine))));
}

} // namespace arbor
