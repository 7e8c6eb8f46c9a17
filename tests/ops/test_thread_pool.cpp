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
