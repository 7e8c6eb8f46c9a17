// Repeated warnings: one line per kind per period, the next one counting those left out.
#include "test_support.h"

#include "api/warning_limiter.h"

using arbor::api::WarningLimiter;
using namespace std::chrono_literals;

class TestWarningLimiter : public QObject {
    Q_OBJECT

private slots:
    void oneLinePerKindPerPeriod() {
        WarningLimiter limiter(10s);
        const auto t0 = WarningLimiter::Clock::now();
        int lines = 0;
        for (int i = 0; i < 1000; ++i)
            if (limiter.admit("full", "refused", t0 + i * 5ms)) ++lines;  // 5 s of a flood
        QCOMPARE(lines, 1);
        // Another kind is not held back by the first.
        QCOMPARE(limiter.admit("evict", "evicted", t0 + 1s).value_or("<none>"), std::string("evicted"));
        // After the period the next line says how many were left out.
        const auto line = limiter.admit("full", "refused", t0 + 11s);
        QVERIFY(line);
        QCOMPARE(*line, std::string("refused (and 999 more like it in the last 11 s)"));
        QVERIFY(!limiter.admit("full", "refused", t0 + 12s));
        // A kind quiet for a period logs its next line plainly.
        QCOMPARE(limiter.admit("evict", "evicted", t0 + 30s).value_or("<none>"), std::string("evicted"));
    }
};

QTEST_GUILESS_MAIN(TestWarningLimiter)
#include "test_warning_limiter.moc"
