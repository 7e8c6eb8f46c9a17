// A fixed pool of worker threads for data-parallel kernels. The calling thread takes
// part in every job, so a pool of size 1 runs everything inline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace arbor {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);  // total threads including the caller; >= 1
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return int(workers_.size()) + 1; }

    // Calls fn(task, thread) for every task in [0, n_tasks) across all threads and
    // returns once all calls have returned. Not re-entrant; one caller at a time.
    template <class F>
    void parallel_for(int64_t n_tasks, F&& fn) {
        run(n_tasks, [](void* ctx, int64_t task, int thread) { (*static_cast<F*>(ctx))(task, thread); },
            &fn);
    }

    using TaskFn = void (*)(void* ctx, int64_t task, int thread);
    void run(int64_t n_tasks, TaskFn fn, void* ctx);

private:
    void worker_loop(int thread);
    void drain(int thread);

    std::vector<std::thread> workers_;
    // Job published by run(): generation_ changes once the fields below are set.
    TaskFn fn_ = nullptr;
    void* ctx_ = nullptr;
    int64_t n_tasks_ = 0;
    std::atomic<int64_t> next_task_{0};
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> busy_workers_{0};
    std::atomic<bool> stop_{false};
    // Workers spin briefly for the next job, then sleep here; sleepers_ lets run() skip
    // the notify (a syscall) while everyone is still spinning.
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<int> sleepers_{0};
};

} // namespace arbor
