// arbor-bench --workload memread: the machine's plain memory-read speed, the ceiling for
// products that stream their weights (decode). Each thread sums its share of a buffer
// much larger than the caches, four independent 32-byte accumulators per thread; the
// figure to compare with the matmul workload's GB/s.
#include "workloads.h"

#include "bench_report.h"
#include "best_rate.h"
#include "arbor/kernels/huge_pages.h"
#include "arbor/kernels/thread_pool.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace arbor::bench {
namespace {

// Sums [begin, end) as 64-bit words, 16 at a time in independent chains that the compiler
// vectorizes; the sums are kept so that the loads are not optimized away.
uint64_t sum_words(const uint64_t* begin, const uint64_t* end) {
    uint64_t acc[16] = {};
    for (const uint64_t* p = begin; p + 16 <= end; p += 16)
        for (int i = 0; i < 16; ++i) acc[i] += p[i];
    uint64_t s = 0;
    for (uint64_t a : acc) s += a;
    return s;
}

} // namespace

WorkloadResult run_memread(int threads) {
    ThreadPool pool(std::max(1, threads));
    WorkloadResult out{"| buffer | threads | GB/s |\n|---|---|---|\n", "["};
    bool first = true;
    for (size_t mib : {size_t(256), size_t(1024)}) {
        const size_t bytes = mib << 20, words = bytes / sizeof(uint64_t);
        // Huge pages as the panels use; every page written once so that reads hit memory.
        const auto storage = allocate_huge_pages(bytes);
        auto* data = reinterpret_cast<uint64_t*>(storage.get());
        pool.parallel_for(pool.size(), [&](int64_t t, int) {
            const size_t begin = words * size_t(t) / size_t(pool.size()), end = words * size_t(t + 1) / size_t(pool.size());
            for (size_t i = begin; i < end; ++i) data[i] = i;
        });
        std::vector<uint64_t> sums(size_t(pool.size()));
        auto pass = [&] {
            pool.parallel_for(pool.size(), [&](int64_t t, int) {
                const size_t begin = words * size_t(t) / size_t(pool.size()) / 16 * 16;
                const size_t end = words * size_t(t + 1) / size_t(pool.size()) / 16 * 16;
                sums[size_t(t)] += sum_words(data + begin, data + end);
            });
        };
        pass();
        const double best = double(bytes) * best_passes_per_second(pass, 0.2) / 1e9;
        out.table += "| " + std::to_string(mib) + " MiB | " + std::to_string(pool.size()) + " | " + fmt("%.2f", best) + " |\n";
        out.json += std::string(first ? "" : ", ") + "{\"buffer_mib\": " + std::to_string(mib) +
                    ", \"gb_per_s\": " + fmt("%.3f", best) + "}";
        first = false;
    }
    out.json += "]";
    return out;
}

} // namespace arbor::bench
