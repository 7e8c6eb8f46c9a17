#include "arbor/kernels/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ARBOR_CPU_RELAX() _mm_pause()
#else
#define ARBOR_CPU_RELAX() std::this_thread::yield()
#endif

namespace arbor {
namespace {
// Roughly 50-100 microseconds of spinning: long enough to cover the gap between the
// kernels of one forward pass, short enough not to burn a core while idle.
constexpr int kSpinIterations = 20000;
} // namespace

ThreadPool::ThreadPool(int n_threads) {
    const int n = n_threads < 1 ? 1 : n_threads;
    workers_.reserve(size_t(n - 1));
    for (int t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_.store(true);
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::drain(int thread) {
    for (;;) {
        const int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (task >= n_tasks_) break;
        fn_(ctx_, task, thread);
    }
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    if (workers_.empty() || n_tasks == 1) {
        for (int64_t i = 0; i < n_tasks; ++i) fn(ctx, i, 0);
        return;
    }
    fn_ = fn;
    ctx_ = ctx;
    n_tasks_ = n_tasks;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_.store(int(workers_.size()), std::memory_order_relaxed);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
        {
            std::lock_guard lock(mutex_);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
    } else {
        generation_.fetch_add(1, std::memory_order_seq_cst);
        // A worker may have started to sleep after the check above; the lock orders it.
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            { std::lock_guard lock(mutex_); }
            wake_.notify_all();
        }
    }
    drain(0);
    while (busy_workers_.load(std::memory_order_acquire) != 0) ARBOR_CPU_RELAX();
}

void ThreadPool::worker_loop(int thread) {
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = generation_.load(std::memory_order_acquire);
        for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
            ARBOR_CPU_RELAX();
            gen = generation_.load(std::memory_order_acquire);
        }
        if (gen == seen) {
            std::unique_lock lock(mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
            gen = generation_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load()) return;
        drain(thread);
        busy_workers_.fetch_sub(1, std::memory_order_release);
    }
}

} // namespace arbor
