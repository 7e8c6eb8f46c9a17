// Downloads from a fake Hub on loopback (fake_hub.h), through the real Qt Network stack:
// listing, complete downloads checked against the sha256, progress, pause and resume
// (also across a restart), transfers cut off part-way, a server that ignores ranges,
// checksum mismatch, 404, gated repositories with and without a token, no disk space and
// cancel. Every case checks the invariant that the final name holds the whole, checked
// file or nothing.
#include "fake_hub.h"
#include "model_download_list.h"
#include "secret_store.h"

#include <QSignalSpy>
#include <QtTest>

using namespace arbor::app;
using arbor::test::FakeHub;

namespace {

constexpr const char* kRepo = "tester/tiny-GGUF";
constexpr const char* kFile = "tiny-Q4_K_M.gguf";

// Bytes that differ at every offset, so a misplaced range shows in the result.
QByteArray pattern(qsizetype n, int seed = 7) {
    QByteArray out(n, Qt::Uninitialized);
    uint32_t x = uint32_t(seed) * 2654435761u + 1;
    for (qsizetype i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        out[i] = char(x >> 24);
    }
    return out;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestModelDownload : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    QString models_;
    std::unique_ptr<FakeHub> hub_;
    QByteArray data_ = pattern(600 * 1024);

    QString finalPath() const { return models_ + "/" + kFile; }
    QString partPath() const { return finalPath() + ".part"; }
    QString sidecarPath() const { return finalPath() + ".part.json"; }
    std::unique_ptr<ModelDownloadList> makeList(SecretStore* secrets = nullptr) {
        return std::make_unique<ModelDownloadList>(models_, secrets, hub_->baseUrl());
    }
    QString start(ModelDownloadList& list, const QString& sha = {}) {
        return list.download(kRepo, kFile, data_.size(), sha.isEmpty() ? FakeHub::sha256Of(data_) : sha);
    }
    // Nothing but the whole, checked file may ever sit under the final name.
    void verifyFinalIsWholeOrAbsent() {
        if (QFile::exists(finalPath())) QCOMPARE(readAll(finalPath()), data_);
    }

private slots:
    void cleanup() { verifyFinalIsWholeOrAbsent(); }

    void init() {
        QVERIFY(tmp_.isValid());
        models_ = tmp_.path() + "/models-" + QString::number(QDateTime::currentMSecsSinceEpoch());
        QDir().mkpath(models_);
        hub_ = std::make_unique<FakeHub>();
        hub_->addFile(kRepo, kFile, data_);
    }

    void listsTheGgufFilesOfARepository() {
        hub_->addFile(kRepo, "tiny-Q8_0.gguf", pattern(1000, 3));
        auto list = makeList();
        QSignalSpy listed(list->hub(), &HfHubClient::listed);
        list->hub()->list(kRepo);
        QVERIFY(list->hub()->busy());
        QVERIFY(listed.wait(5000));
        QCOMPARE(list->hub()->error(), QString());
        const QList<HubFile> files = list->hub()->ggufFiles();  // README.md and a directory left out
        QCOMPARE(files.size(), 2);
        QCOMPARE(files[0].path, QString(kFile));
        QCOMPARE(files[0].size, data_.size());
        QCOMPARE(files[0].sha256, FakeHub::sha256Of(data_));
        QCOMPARE(files[1].path, QString("tiny-Q8_0.gguf"));
        QCOMPARE(files[1].size, 1000);
        QCOMPARE(list->hub()->files().value(1).toMap().value("sizeText").toString(), QString("1.0 KB"));
        QCOMPARE(hub_->requests().last().path, QByteArray("/api/models/tester/tiny-GGUF/tree/main"));
    }

    void listingErrorsSayWhy() {
        auto list = makeList();
        QSignalSpy listed(list->hub(), &HfHubClient::listed);
        list->hub()->list("nobody/nothing");
        QVERIFY(listed.wait(5000));
        QVERIFY2(list->hub()->error().contains("was not found on the Hub (404)"), qPrintable(list->hub()->error()));
        QVERIFY(list->hub()->files().isEmpty());
        const qsizetype before = hub_->requests().size();
        list->hub()->list("not a repository");
        QCOMPARE(listed.count(), 2);  // at once, without asking the Hub
        QVERIFY2(list->hub()->error().contains("is not a repository name"), qPrintable(list->hub()->error()));
        QCOMPARE(hub_->requests().size(), before);
        QVERIFY(!HfHubClient::repositoryProblem("../etc").isEmpty());
        QCOMPARE(HfHubClient::repositoryProblem("Qwen/Qwen3-0.6B-GGUF"), QString());
    }

    void downloadsAndChecksTheFile() {
        auto list = makeList();
        QSignalSpy done(list.get(), &ModelDownloadList::downloaded);
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        QVERIFY(!QFile::exists(partPath()));
        QVERIFY(!QFile::exists(sidecarPath()));
        QCOMPARE(done.count(), 1);
        QCOMPARE(done.first().first().toString(), finalPath());
        QCOMPARE(d->receivedBytes(), data_.size());
        QCOMPARE(hub_->fileRequests().first().path, QByteArray("/tester/tiny-GGUF/resolve/main/tiny-Q4_K_M.gguf"));
        QVERIFY(!hub_->fileRequests().first().headers.contains("range"));
    }

    // The checksum is the SHA-256 of the bytes: FIPS 180-2's example "abc".
    void checksumIsTheSha256OfTheBytes() {
        hub_->addFile(kRepo, "abc.gguf", "abc");
        auto list = makeList();
        QCOMPARE(list->download(kRepo, "abc.gguf", 3, "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"), QString());
        QTRY_COMPARE_WITH_TIMEOUT(list->at(0)->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(models_ + "/abc.gguf"), QByteArray("abc"));
    }

    void reportsProgressSpeedAndTimeLeft() {
        hub_->throttle(8 * 1024, 20);  // about 400 KB/s: 600 KB take 1.5 s, three speed windows
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QCOMPARE(d->totalBytes(), data_.size());
        QList<qint64> seen;
        bool sawSpeed = false, sawEta = false;
        connect(d, &ModelDownload::progress, this, [&] {
            seen << d->receivedBytes();
            sawSpeed = sawSpeed || d->bytesPerSecond() > 0;
            sawEta = sawEta || d->secondsLeft() >= 0;
        });
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 15000);
        QVERIFY2(seen.size() > 5, qPrintable(QString::number(seen.size())));
        QVERIFY(std::is_sorted(seen.begin(), seen.end()));
        QVERIFY(sawSpeed);
        QVERIFY(sawEta);
        QCOMPARE(d->secondsLeft(), -1);  // not downloading any more
        QCOMPARE(readAll(finalPath()), data_);
    }

    void pauseAndResumeWithARange() {
        hub_->throttle(8 * 1024, 10);
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_VERIFY_WITH_TIMEOUT(d->receivedBytes() > 100 * 1024, 10000);
        d->pause();
        QCOMPARE(d->state(), ModelDownload::State::Paused);
        const qint64 kept = d->receivedBytes();
        QCOMPARE(QFileInfo(partPath()).size(), kept);
        QVERIFY(QFile::exists(sidecarPath()));
        QVERIFY(!QFile::exists(finalPath()));
        QCOMPARE(readAll(partPath()), data_.left(kept));
        hub_->throttle(0);
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        const auto resumed = hub_->fileRequests().last();
        QCOMPARE(resumed.headers.value("range"), "bytes=" + QByteArray::number(kept) + "-");
        QCOMPARE(resumed.headers.value("if-range"), "\"" + FakeHub::sha256Of(data_).toLatin1() + "\"");
    }

    // The app closed mid-download: the next start lists it paused and resumes it.
    void resumesAfterARestart() {
        hub_->throttle(8 * 1024, 10);
        qint64 kept = 0;
        {
            auto list = makeList();
            QCOMPARE(start(*list), QString());
            QTRY_VERIFY_WITH_TIMEOUT(list->at(0)->receivedBytes() > 64 * 1024, 10000);
        }  // gone without pausing: as when the app quits
        kept = QFileInfo(partPath()).size();
        QVERIFY(kept > 0);
        QVERIFY(!QFile::exists(finalPath()));
        hub_->throttle(0);
        auto list = makeList();
        QCOMPARE(list->rowCount(), 1);
        ModelDownload* d = list->at(0);
        QCOMPARE(d->state(), ModelDownload::State::Paused);
        QCOMPARE(d->fileName(), QString(kFile));
        QCOMPARE(d->receivedBytes(), kept);
        QCOMPARE(d->totalBytes(), data_.size());
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        QCOMPARE(hub_->fileRequests().last().headers.value("range"), "bytes=" + QByteArray::number(kept) + "-");
    }

    void anInterruptedTransferFailsAndResumes() {
        hub_->interruptNextAfter(100000);
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        QVERIFY2(d->error().contains("resume to continue", Qt::CaseInsensitive) || d->error().contains("Resume to continue"),
                 qPrintable(d->error()));
        QVERIFY(!QFile::exists(finalPath()));
        QCOMPARE(QFileInfo(partPath()).size(), 100000);
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        QCOMPARE(hub_->fileRequests().last().headers.value("range"), QByteArray("bytes=100000-"));
    }

    // A server that answers a range with the whole file: the part starts over.
    void aServerIgnoringRangesStartsOver() {
        hub_->setIgnoreRanges(true);
        hub_->interruptNextAfter(50000);
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
    }

    void aChecksumMismatchDiscardsTheDownload() {
        const QString wrong = FakeHub::sha256Of("something else");
        auto list = makeList();
        QCOMPARE(start(*list, wrong), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        QVERIFY2(d->error().contains("does not match the Hub's sha256"), qPrintable(d->error()));
        QVERIFY(d->error().contains(wrong));
        QVERIFY(!QFile::exists(finalPath()));
        QVERIFY(!QFile::exists(partPath()));
        QVERIFY(!QFile::exists(sidecarPath()));
    }

    void aMissingFileSays404() {
        auto list = makeList();
        QCOMPARE(list->download(kRepo, "absent.gguf", 10, FakeHub::sha256Of("x")), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        QVERIFY2(d->error().contains("(404)"), qPrintable(d->error()));
        QVERIFY(!QFile::exists(models_ + "/absent.gguf"));
        QCOMPARE(QFileInfo(models_ + "/absent.gguf.part").size(), 0);  // the error page is not written
    }

    void aGatedRepositoryNeedsAToken() {
        hub_->setGated(kRepo);
        SecretStore secrets((tmp_.path() + "/secrets").toStdString(), false);
        auto list = makeList(&secrets);
        QVERIFY(!list->hasToken());
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        QVERIFY2(d->error().contains("needs a Hugging Face token (401)"), qPrintable(d->error()));
        QVERIFY(!hub_->fileRequests().last().headers.contains("authorization"));

        list->setToken(FakeHub::kNoAccessToken);
        QVERIFY(list->hasToken());
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Failed, 10000);
        QVERIFY2(d->error().contains("(403)") && d->error().contains("gated"), qPrintable(d->error()));

        list->setToken(QString(" ") + FakeHub::kGoodToken + " ");  // pasted with spaces
        QCOMPARE(list->tokenError(), QString());
        QCOMPARE(secrets.read(ModelDownloadList::kTokenSecret), std::optional<std::string>(FakeHub::kGoodToken));
        d->start();
        QTRY_COMPARE_WITH_TIMEOUT(d->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        QCOMPARE(hub_->fileRequests().last().headers.value("authorization"), QByteArray("Bearer ") + FakeHub::kGoodToken);

        // A new run reads the stored token.
        auto again = makeList(&secrets);
        QVERIFY(again->hasToken());
    }

    void refusesWhenTheDiskIsTooSmall() {
        auto list = makeList();
        const qint64 huge = qint64(1) << 60;  // an exabyte
        QCOMPARE(list->download(kRepo, kFile, huge, FakeHub::sha256Of(data_)), QString());
        ModelDownload* d = list->at(0);
        QCOMPARE(d->state(), ModelDownload::State::Failed);
        QVERIFY2(d->error().startsWith("Not enough disk space"), qPrintable(d->error()));
        QVERIFY(hub_->fileRequests().isEmpty());
        QVERIFY(!QFile::exists(finalPath()));
    }

    void cancelRemovesEverything() {
        hub_->throttle(8 * 1024, 10);
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        ModelDownload* d = list->at(0);
        QTRY_VERIFY_WITH_TIMEOUT(d->receivedBytes() > 32 * 1024, 10000);
        d->cancel();
        QCOMPARE(d->state(), ModelDownload::State::Cancelled);
        QVERIFY(!QFile::exists(partPath()));
        QVERIFY(!QFile::exists(sidecarPath()));
        QVERIFY(!QFile::exists(finalPath()));
        list->dismiss(0);
        QCOMPARE(list->rowCount(), 0);
    }

    void refusesDuplicatesAndBadNames() {
        hub_->throttle(1024, 50);
        auto list = makeList();
        QCOMPARE(start(*list), QString());
        QVERIFY(start(*list).contains("already being downloaded"));
        QVERIFY(list->download(kRepo, "notes.txt", 1, {}).contains("is not a .gguf file"));
        QVERIFY(list->download(kRepo, "../../escape.gguf", 1, {}).contains("is not a .gguf file"));
        QVERIFY(list->download("bad name", kFile, 1, {}).contains("is not a repository name"));
        list->dismiss(0);  // refused while it runs
        QCOMPARE(list->rowCount(), 1);
        list->at(0)->cancel();
        QFile f(finalPath());
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        QVERIFY(start(*list).contains("already in the library"));
        QVERIFY(QFile::remove(finalPath()));  // an empty stand-in, not a download
    }

    // A catalogue entry: the size and sha256 come from the Hub's listing at the time.
    void downloadsACatalogueEntryWithTheHubsChecksum() {
        auto list = makeList();
        list->downloadFromHub(kRepo, kFile);
        QTRY_COMPARE_WITH_TIMEOUT(list->rowCount(), 1, 10000);
        QCOMPARE(list->at(0)->totalBytes(), data_.size());
        QCOMPARE(list->at(0)->spec().sha256, FakeHub::sha256Of(data_));
        QTRY_COMPARE_WITH_TIMEOUT(list->at(0)->state(), ModelDownload::State::Finished, 10000);
        QCOMPARE(readAll(finalPath()), data_);
        QCOMPARE(list->lastError(), QString());

        list->downloadFromHub(kRepo, "renamed-since.gguf");
        QTRY_VERIFY_WITH_TIMEOUT(list->lastError().contains("has no file renamed-since.gguf"), 10000);
        list->downloadFromHub("nobody/nothing", kFile);
        QTRY_VERIFY_WITH_TIMEOUT(list->lastError().contains("(404)"), 10000);
        QCOMPARE(list->rowCount(), 1);
    }

    void catalogueEntriesAreComplete() {
        QString problem;
        const QVariantList entries = ModelDownloadList::readCatalogue(":/arbor/models/catalogue.json", &problem);
        QCOMPARE(problem, QString());
        QVERIFY2(entries.size() >= 12, qPrintable(QString::number(entries.size())));
        QSet<QString> families, files;
        for (const QVariant& v : entries) {
            const QVariantMap e = v.toMap();
            const QString what = e.value("name").toString();
            QVERIFY2(!what.isEmpty(), "an entry without a name");
            QVERIFY2(HfHubClient::repositoryProblem(e.value("repository").toString()).isEmpty(), qPrintable(what));
            QVERIFY2(e.value("file").toString().endsWith(".gguf"), qPrintable(what));
            QVERIFY2(e.value("approxSize").toLongLong() > 100'000'000, qPrintable(what));
            QVERIFY2(!e.value("licence").toString().isEmpty(), qPrintable(what));
            QVERIFY2(!e.value("description").toString().isEmpty(), qPrintable(what));
            families << e.value("family").toString();
            files << e.value("file").toString();
        }
        QVERIFY(families.size() >= 5);
        QCOMPARE(files.size(), entries.size());  // no file twice
        ModelDownloadList::readCatalogue(tmp_.path() + "/absent.json", &problem);
        QVERIFY(problem.contains("cannot be read"));
    }
};

QTEST_GUILESS_MAIN(TestModelDownload)
#include "test_model_download.moc"
