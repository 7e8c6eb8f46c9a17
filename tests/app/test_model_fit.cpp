// The fit estimate with fixed inputs, each expected number worked out by hand in the
// comment beside it.
#include "model_fit.h"

#include <QtTest>

#include <fstream>

using namespace arbor::app;

class TestModelFit : public QObject {
    Q_OBJECT

private slots:
    void kvBytesPerType() {
        // SmolLM2-135M: 30 layers, 3 KV heads of 64 -> KV dim 192.
        // f16, 2048 tokens: 2 x 30 x 192 x 2048 x 2 = 47185920.
        QCOMPARE(kvCacheBytes(30, 192, 2048, *kvElementBytes("f16")), uint64_t(47185920));
        // f32: twice that.
        QCOMPARE(kvCacheBytes(30, 192, 2048, *kvElementBytes("f32")), uint64_t(94371840));
        // q8_0: 34 bytes per 32 elements: 23592960 elements x 34 / 32 = 25067520.
        QCOMPARE(kvCacheBytes(30, 192, 2048, *kvElementBytes("q8_0")), uint64_t(25067520));
        QVERIFY(!kvElementBytes("q4_0"));
        QCOMPARE(kvCacheBytes(0, 192, 2048, 2.0), uint64_t(0));
        QCOMPARE(kvCacheBytes(30, 192, -1, 2.0), uint64_t(0));
    }

    void verdicts() {
        // 8 GB available: fits up to 6.4 GB, tight up to 8 GB.
        const uint64_t avail = 8'000'000'000;
        QCOMPARE(estimateFit(4'000'000'000, 2'400'000'000, avail).verdict, FitVerdict::Fits);       // 6.4 GB
        QCOMPARE(estimateFit(4'000'000'000, 2'400'000'001, avail).verdict, FitVerdict::Tight);
        QCOMPARE(estimateFit(6'000'000'000, 2'000'000'000, avail).verdict, FitVerdict::Tight);      // 8.0 GB
        QCOMPARE(estimateFit(6'000'000'000, 2'000'000'001, avail).verdict, FitVerdict::WillNotFit);
        QCOMPARE(estimateFit(1, 1, 0).verdict, FitVerdict::Unknown);
        QCOMPARE(estimateFit(4'000'000'000, 2'400'000'000, avail).neededBytes(), uint64_t(6'400'000'000));
    }

    void textCarriesTheNumbers() {
        const FitEstimate fit = estimateFit(900'000'000, 300'000'000, 7'500'000'000);
        QCOMPARE(QString::fromStdString(fitText(fit, 4096)),
                 QString("Fits: needs 1.2 GB (weights 900 MB + KV 300 MB for 4096 tokens) of 7.5 GB available."));
        const FitEstimate big = estimateFit(20'000'000'000, 4'000'000'000, 16'000'000'000);
        QCOMPARE(QString::fromStdString(fitText(big, 8192)),
                 QString("Will not fit: needs 24 GB (weights 20 GB + KV 4.0 GB for 8192 tokens) of 16 GB available."));
        QCOMPARE(QString::fromStdString(fitText(estimateFit(1000, 0, 0), 256)),
                 QString("Unknown: needs 1.0 KB (weights 1.0 KB + KV 0 B for 256 tokens); the available memory is unknown."));
    }

    void byteSizes() {
        QCOMPARE(QString::fromStdString(byteSizeText(999)), QString("999 B"));
        QCOMPARE(QString::fromStdString(byteSizeText(1000)), QString("1.0 KB"));
        QCOMPARE(QString::fromStdString(byteSizeText(138'000'000)), QString("138 MB"));
        QCOMPARE(QString::fromStdString(byteSizeText(4'920'000'000)), QString("4.9 GB"));
    }

    void memAvailableFromMeminfoText() {
        const std::string meminfo = "MemTotal:       16303540 kB\nMemFree:         1234567 kB\n"
                                    "MemAvailable:    7340032 kB\nBuffers:          123456 kB\n";
        // 7340032 KiB x 1024 = 7516192768 bytes.
        QCOMPARE(memAvailableFromMeminfo(meminfo), std::optional<uint64_t>(7516192768ull));
        QVERIFY(!memAvailableFromMeminfo("MemTotal: 1 kB\nMemFree: 2 kB\n"));        // old kernels: absent
        QVERIFY(!memAvailableFromMeminfo("MemAvailable:    lots kB\n"));
        QVERIFY(!memAvailableFromMeminfo("MemAvailable:    12 MB\n"));
        QVERIFY(!memAvailableFromMeminfo("XMemAvailable:    12 kB\n"));
    }

    void readsAMeminfoFile() {
        QTemporaryDir tmp;
        const std::string path = (tmp.path() + "/meminfo").toStdString();
        std::ofstream(path) << "MemTotal: 4 kB\nMemAvailable: 3 kB\n";
        QCOMPARE(availableMemoryBytes(path), std::optional<uint64_t>(3072));
        QVERIFY(!availableMemoryBytes(tmp.path().toStdString() + "/absent"));
        // This system's: Linux has had MemAvailable since 3.14.
        QVERIFY(availableMemoryBytes().value_or(0) > 0);
    }

};

QTEST_GUILESS_MAIN(TestModelFit)
#include "test_model_fit.moc"
