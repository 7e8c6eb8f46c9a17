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
// How long a worker spins for the next job before it sleeps (and the caller for the
// workers' last tasks before it yields its core): long enough to cover the gap
// between the kernels of one forward pass, short enough not to burn a core while idle or
// while the thread that would start the next job waits for a core (on a busy 2-core
// machine a worker spinning through such waits took 28-32% of decode's samples, and one
// chat's decode went from 18-19 to 21-23 tokens/s with 50 us, 25-28 with 10 us). A time,
// not a count of pauses: a pause takes a few cycles on some cores and about 30 ns on
// Zen 3, where the 20,000 meant to last 50-100 us took 0.6 ms.
constexpr auto kSpinTime = std::chrono::microseconds(20);
// Pauses between looks at the clock.
constexpr int kPausesPerClockRead = 16;
uint32_t job_of(uint64_t state) { return uint32_t(state >> 32); }
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
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::work_on(uint32_t job_id, int thread) {
    const Job& job = jobs_[job_id % 2];
    uint64_t s = state_.load(std::memory_order_acquire);
    int64_t finished = 0;
    for (;;) {
        if (job_of(s) != job_id) break;
        const int64_t task = int64_t(s & 0xffffffffu);
        // Fields read before the CAS belong to job_id if the CAS succeeds (see jobs_).
        const int64_t n = job.n_tasks;
        const TaskFn fn = job.fn;
        void* const ctx = job.ctx;
        if (task >= n) break;
        if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
        fn(ctx, task, thread);
        ++finished;
        s = state_.load(std::memory_order_acquire);
    }
    if (finished > 0) done_.fetch_add(finished, std::memory_order_release);
}

void ThreadPool::run(int64_t n_tasks, TaskFn fn, void* ctx) {
    if (n_tasks <= 0) return;
    if (workers_.empty() || n_tasks == 1) {
        for (int64_t i = 0; i < n_tasks; ++i) fn(ctx, i, 0);
        return;
    }
    const uint32_t job_id = job_of(state_.load(std::memory_order_relaxed)) + 1;
    jobs_[job_id % 2] = Job{fn, ctx, n_tasks};
    done_.store(0, std::memory_order_relaxed);
    state_.store(uint64_t(job_id) << 32, std::memory_order_seq_cst);
    // A worker about to sleep re-checks state_ under the lock, so it cannot miss this job.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
        { std::lock_guard lock(mutex_); }
        wake_.notify_all();
    }
    work_on(job_id, 0);
    // Waiting for the workers' last tasks: spin for kSpinTime, then yield the core, so that
    // on a busy machine a worker waiting for a core can get this one.
    const auto until = std::chrono::steady_clock::now() + kSpinTime;
    for (int spin = 1; done_.load(std::memory_order_acquire) < n_tasks; ++spin) {
        if (spin % kPausesPerClockRead == 0 && std::chrono::steady_clock::now() >= until) std::this_thread::yield();
        else ARBOR_CPU_RELAX();
    }
}

void ThreadPool::worker_loop(int thread) {
    uint32_t seen = 0;
    for (;;) {
        uint32_t job = job_of(state_.load(std::memory_order_acquire));
        if (job == seen) {
            const auto until = std::chrono::steady_clock::now() + kSpinTime;
            for (int spin = 1; job == seen; ++spin) {
                ARBOR_CPU_RELAX();
                job = job_of(state_.load(std::memory_order_acquire));
                if (spin % kPausesPerClockRead == 0 && std::chrono::steady_clock::now() >= until) break;
            }
        }
        if (job == seen) {
            std::unique_lock lock(mutex_);
            sleepers_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return stop_.load() || job_of(state_.load(std::memory_order_seq_cst)) != seen; });
            sleepers_.fetch_sub(1, std::memory_order_relaxed);
            if (stop_.load()) return;
            job = job_of(state_.load(std::memory_order_acquire));
        }
        seen = job;
        work_on(job, thread);
    }
}

} // namespace arbor
