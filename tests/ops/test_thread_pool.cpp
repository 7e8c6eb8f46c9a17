#include "arbor/kernels/thread_pool.h"

#include <QtTest>

#include <atomic>
#include <vector>

class TestThreadPool : public QObject {
    Q_OBJECT
private slots:
    void everyTaskRunsExactlyOnce_data() {
        QTest::addColumn<int>("threads");
        for (int t : {1, 2, 4, 8}) QTest::newRow(qPrintable(QString::number(t))) << t;
    }
    void everyTaskRunsExactlyOnce() {
        QFETCH(int, threads);
        arbor::ThreadPool pool(threads);
        QCOMPARE(pool.size(), threads);
        for (int round = 0; round < 200; ++round) {
            const int n = 1 + round % 37;
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::atomic<int> bad_thread{0};
            pool.parallel_for(n, [&](int64_t task, int thread) {
                hits[size_t(task)].fetch_add(1);
                if (thread < 0 || thread >= threads) bad_thread.fetch_add(1);
            });
            for (int i = 0; i < n; ++i) QCOMPARE(hits[size_t(i)].load(), 1);
            QCOMPARE(bad_thread.load(), 0);
        }
    }

    // The call returns only once every task has returned, also when the caller has run
    // out of tasks to claim while a worker is still inside one: the caller's task waits
    // until a worker has started the other task, which then takes 20 ms.
    void returnsOnlyAfterEveryTaskReturned() {
        arbor::ThreadPool pool(2);
        for (int round = 0; round < 5; ++round) {
            std::atomic<bool> worker_started{false};
            std::atomic<int> finished[2] = {0, 0};
            pool.parallel_for(2, [&](int64_t task, int thread) {
                if (thread != 0) {
                    worker_started.store(true);
                    QTest::qSleep(20);
                } else {
                    QElapsedTimer waited;
                    waited.start();
                    while (!worker_started.load() && waited.elapsed() < 2000) QThread::yieldCurrentThread();
                }
                finished[task].store(1);
            });
            QVERIFY2(worker_started.load(), "no worker took a task within 2 s");
            QCOMPARE(finished[0].load() + finished[1].load(), 2);
        }
    }

    void survivesIdleSleepAndWakes() {
        arbor::ThreadPool pool(3);
        std::atomic<int> count{0};
        pool.parallel_for(10, [&](int64_t, int) { count.fetch_add(1); });
        QTest::qSleep(50);  // long enough for workers to stop spinning and sleep
        pool.parallel_for(10, [&](int64_t, int) { count.fetch_add(1); });
        QCOMPARE(count.load(), 20);
    }
};

QTEST_APPLESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
