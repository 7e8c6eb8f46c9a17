#include "arbor/kernels/huge_pages.h"

#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace arbor {

std::shared_ptr<uint8_t[]> allocate_huge_pages(std::size_t bytes) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    auto* p = static_cast<uint8_t*>(std::aligned_alloc(kHugePage, rounded > 0 ? rounded : kHugePage));
    if (!p) throw std::bad_alloc();
#if defined(__linux__)
    // Before the first write: the pages are then faulted in as huge ones.
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return std::shared_ptr<uint8_t[]>(p, [](uint8_t* q) { std::free(q); });
}

} // namespace arbor
