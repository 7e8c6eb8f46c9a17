// The app-wide settings over a real database: defaults, clamping and rejection of bad
// values (the Device setting's with a message), persistence across runs (checked in the
// file itself), and a model path given for one run that is never saved.
#include "app_settings.h"

#include "arbor/paths.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include <memory>

using arbor::app::AppSettings;
using arbor::app::StoreService;

namespace {

constexpr int kWaitMs = 10000;

} // namespace

class TestAppSettings : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    int n_ = 0;
    std::filesystem::path file_;

    // A settings object over an opened service, loaded.
    bool loadInto(AppSettings& settings) {
        QSignalSpy loaded(&settings, &AppSettings::loaded);
        settings.load();
        return loaded.wait(kWaitMs) && loaded.size() == 1;
    }

    static std::optional<std::string> stored(const std::filesystem::path& file, const char* key) {
        arbor::Store store(file);
        return store.app_setting(key);
    }

private slots:
    void init() {
        QVERIFY(dir_.isValid());
        file_ = std::filesystem::path(dir_.path().toStdString()) / ("db" + std::to_string(++n_)) / "arbor.db";
    }

    void defaults() {
        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        const QString defaultModel = QString::fromStdString(arbor::default_model_path().string());
        QVERIFY(!defaultModel.isEmpty());
        // Before and after loading an empty database.
        for (int pass = 0; pass < 2; ++pass) {
            QCOMPARE(settings.modelPath(), defaultModel);
            QCOMPARE(settings.threads(), 0);
            QCOMPARE(settings.kvMemoryMiB(), 512);
            QCOMPARE(settings.kvDiskMiB(), 4096);
            QCOMPARE(settings.kvType(), QString("f16"));
            QCOMPARE(settings.device(), QString("auto"));
            QCOMPARE(settings.theme(), QString("system"));
            if (pass == 0) QVERIFY(loadInto(settings));
        }
        QVERIFY(settings.maxThreads() >= 1);
        QCOMPARE(settings.maxThreads(), std::max(1, QThread::idealThreadCount()));
        QVERIFY(!stored(file_, "model.path"));  // nothing written by reading
    }

    void settersClampAndIgnore() {
        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QSignalSpy changed(&settings, &AppSettings::changed);

        settings.setThreads(-4);
        QCOMPARE(settings.threads(), 0);
        QCOMPARE(changed.size(), 0);  // clamped to the value it had
        settings.setThreads(100000);
        QCOMPARE(settings.threads(), settings.maxThreads());
        QCOMPARE(changed.size(), 1);
        settings.setThreads(0);
        QCOMPARE(settings.threads(), 0);
        QCOMPARE(changed.size(), 2);

        settings.setKvMemoryMiB(1);
        QCOMPARE(settings.kvMemoryMiB(), 32);
        settings.setKvMemoryMiB(-100);
        QCOMPARE(settings.kvMemoryMiB(), 32);
        settings.setKvMemoryMiB(10'000'000);
        QCOMPARE(settings.kvMemoryMiB(), 65536);
        settings.setKvMemoryMiB(768);
        QCOMPARE(settings.kvMemoryMiB(), 768);
        QCOMPARE(changed.size(), 5);

        settings.setKvDiskMiB(-1);
        QCOMPARE(settings.kvDiskMiB(), 0);  // off
        settings.setKvDiskMiB(1 << 30);
        QCOMPARE(settings.kvDiskMiB(), AppSettings::kMaxKvDiskMiB);
        settings.setKvType("q4_0");
        settings.setKvType("F16");
        QCOMPARE(settings.kvType(), QString("f16"));
        settings.setKvType("q8_0");
        QCOMPARE(settings.kvType(), QString("q8_0"));
        QCOMPARE(changed.size(), 8);
        changed.clear();

        settings.setTheme("purple");
        settings.setTheme("");
        settings.setTheme("Dark");  // case matters
        QCOMPARE(settings.theme(), QString("system"));
        QCOMPARE(changed.size(), 0);
        settings.setTheme("dark");
        QCOMPARE(settings.theme(), QString("dark"));
        settings.setTheme("light");
        QCOMPARE(settings.theme(), QString("light"));
        QCOMPARE(changed.size(), 2);

        const QString before = settings.modelPath();
        settings.setModelPath("");
        QCOMPARE(settings.modelPath(), before);
        settings.setModelPath(before);
        QCOMPARE(changed.size(), 2);
        settings.setModelPath("/models/other.gguf");
        QCOMPARE(settings.modelPath(), QString("/models/other.gguf"));
        QCOMPARE(changed.size(), 3);
    }

    void valuesPersistAcrossRuns() {
        const int threads = std::min(2, std::max(1, QThread::idealThreadCount()));
        {
            StoreService service(file_);
            service.open();
            AppSettings settings(service);
            QVERIFY(loadInto(settings));
            settings.setModelPath("/models/chosen.gguf");
            settings.setThreads(threads);
            settings.setKvMemoryMiB(1024);
            settings.setKvDiskMiB(0);
            settings.setKvType("q8_0");
            settings.setTheme("dark");
        }  // the service finishes its queued writes before it goes
        QCOMPARE(stored(file_, "model.path"), std::optional<std::string>("/models/chosen.gguf"));
        QCOMPARE(stored(file_, "engine.threads"), std::optional<std::string>(std::to_string(threads)));
        QCOMPARE(stored(file_, "engine.kv_mib"), std::optional<std::string>("1024"));
        QCOMPARE(stored(file_, "ui.theme"), std::optional<std::string>("dark"));
        QCOMPARE(stored(file_, "engine.kv_disk_mib"), std::optional<std::string>("0"));
        QCOMPARE(stored(file_, "engine.kv_type"), std::optional<std::string>("q8_0"));

        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QSignalSpy changed(&settings, &AppSettings::changed);
        QVERIFY(loadInto(settings));
        QVERIFY(changed.size() >= 1);
        QCOMPARE(settings.modelPath(), QString("/models/chosen.gguf"));
        QCOMPARE(settings.threads(), threads);
        QCOMPARE(settings.kvMemoryMiB(), 1024);
        QCOMPARE(settings.kvDiskMiB(), 0);
        QCOMPARE(settings.kvType(), QString("q8_0"));
        QCOMPARE(settings.theme(), QString("dark"));
    }

    // The Device setting: auto, cpu and cuda:N are kept (and read back on the next run);
    // anything else is refused with a message that names it, and changes nothing.
    void deviceIsCheckedAndKept() {
        {
            StoreService service(file_);
            service.open();
            AppSettings settings(service);
            QVERIFY(loadInto(settings));
            QSignalSpy changed(&settings, &AppSettings::changed);
            for (const QString bad : {"gpu", "", "CPU", "cuda:", "cuda:x", "cuda:-1", " cpu", "cuda:0 "}) {
                const QString problem = settings.setDevice(bad);
                QVERIFY2(problem.contains(QStringLiteral("“%1” is no device").arg(bad)), qPrintable(bad + ": " + problem));
                QVERIFY2(problem.contains("auto, cpu or cuda:N"), qPrintable(problem));
            }
            QCOMPARE(settings.device(), QString("auto"));
            QCOMPARE(changed.size(), 0);
            QCOMPARE(settings.setDevice("cpu"), QString());
            QCOMPARE(settings.device(), QString("cpu"));
            QCOMPARE(settings.setDevice("cuda"), QString());
            QCOMPARE(settings.device(), QString("cuda:0"));  // "cuda" is device 0
            QCOMPARE(settings.setDevice("cuda:0"), QString());
            QCOMPARE(changed.size(), 2);
            QCOMPARE(settings.setDevice("cuda:02"), QString());
            QCOMPARE(settings.device(), QString("cuda:2"));
        }
        QCOMPARE(stored(file_, "engine.device"), std::optional<std::string>("cuda:2"));
        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.device(), QString("cuda:2"));
        QCOMPARE(settings.setDevice("auto"), QString());
        QVERIFY(!settings.setDevice("nvidia").isEmpty());
        QCOMPARE(settings.device(), QString("auto"));
        QTRY_COMPARE(stored(file_, "engine.device"), std::optional<std::string>("auto"));
    }

    // The model library's extra folders: only existing folders, each once, kept as a JSON
    // array and read back on the next run.
    void modelFoldersAreCheckedAndKept() {
        const QString a = dir_.path() + "/folder-a", b = dir_.path() + "/folder-b";
        QVERIFY(QDir().mkpath(a) && QDir().mkpath(b));
        {
            StoreService service(file_);
            service.open();
            AppSettings settings(service);
            QVERIFY(loadInto(settings));
            QCOMPARE(settings.modelFolders(), QStringList());
            QCOMPARE(settings.addModelFolder(a), QString());
            QCOMPARE(settings.addModelFolder(QUrl::fromLocalFile(b).toString()), QString());  // from a folder dialog
            QCOMPARE(settings.addModelFolder(a + "/"), QString());  // the same folder again
            const QString missing = dir_.path() + "/absent";
            QCOMPARE(settings.addModelFolder(missing), missing + " is not a folder.");
            QCOMPARE(settings.addModelFolder("relative/dir"), QString("relative/dir is not a folder."));
            QCOMPARE(settings.modelFolders(), (QStringList{a, b}));
            settings.removeModelFolder(a);
            QCOMPARE(settings.modelFolders(), QStringList{b});
        }
        QCOMPARE(stored(file_, "model.folders"), std::optional<std::string>(QJsonDocument(QJsonArray{b}).toJson(QJsonDocument::Compact).toStdString()));
        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.modelFolders(), QStringList{b});
    }

    // Per model file: refused values give their reason and change nothing; a kept one
    // is in the file and comes back on the next run; other models keep their own.
    void contextLengthPerModelIsValidatedAndKept() {
        const QString small = QStringLiteral("/models/small.gguf"), other = QStringLiteral("/models/other.gguf");
        {
            StoreService service(file_);
            service.open();
            AppSettings settings(service);
            QVERIFY(loadInto(settings));
            QCOMPARE(settings.contextLength(small), 0);  // none chosen: the model's own
            QSignalSpy changed(&settings, &AppSettings::changed);
            QCOMPARE(settings.contextLengthProblem("", 8192), QString());
            QCOMPARE(settings.contextLengthProblem("512", 8192), QString());
            QCOMPARE(settings.contextLengthProblem("8192", 8192), QString());
            QCOMPARE(settings.setContextLength(small, "9000", 8192),
                     QString("must be at most 8192 tokens, the context the model was trained with"));
            QCOMPARE(settings.setContextLength(small, "100", 8192), QString("must be at least 256 tokens"));
            QCOMPARE(settings.setContextLength(small, "1k", 8192), QString("must be a whole number of tokens"));
            QCOMPARE(settings.setContextLength(small, "-512", 8192), QString("must be at least 256 tokens"));
            QCOMPARE(changed.size(), 0);
            QCOMPARE(settings.contextLength(small), 0);
            QCOMPARE(settings.setContextLength(small, " 512 ", 8192), QString());
            QCOMPARE(settings.setContextLength(other, "4096", 8192), QString());
            QCOMPARE(changed.size(), 2);
            QCOMPARE(settings.contextLength(small), 512);
            QCOMPARE(settings.contextLengths().value(other).toInt(), 4096);
            QCOMPARE(settings.setContextLength(other, "", 8192), QString());  // back to the model's own
            QCOMPARE(settings.contextLength(other), 0);
            QVERIFY(!settings.contextLengths().contains(other));
        }
        const auto json = stored(file_, "model.context_lengths");
        QVERIFY(json);
        QCOMPARE(QJsonDocument::fromJson(QByteArray::fromStdString(*json)).object(),
                 QJsonObject({{"/models/small.gguf", 512}}));

        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.contextLength(small), 512);
        QCOMPARE(settings.contextLength(other), 0);
    }

    void badStoredValuesFallBack() {
        {
            arbor::Store store(file_);
            store.set_app_setting("engine.threads", "many");
            store.set_app_setting("engine.kv_mib", "99999999");
            store.set_app_setting("ui.theme", "neon");
            store.set_app_setting("model.path", "");
            store.set_app_setting("engine.kv_disk_mib", "-5");
            store.set_app_setting("engine.kv_type", "q4_0");
            store.set_app_setting("engine.device", "gpu");
            store.set_app_setting("model.context_lengths", R"({"/a.gguf": 100, "/b.gguf": "x", "/c.gguf": 1024})");
        }
        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.threads(), 0);
        QCOMPARE(settings.kvMemoryMiB(), 65536);
        QCOMPARE(settings.theme(), QString("system"));
        QCOMPARE(settings.modelPath(), QString::fromStdString(arbor::default_model_path().string()));
        QCOMPARE(settings.kvDiskMiB(), AppSettings::kDefaultKvDiskMiB);
        QCOMPARE(settings.kvType(), QString("f16"));
        QCOMPARE(settings.device(), QString("auto"));
        QCOMPARE(settings.contextLengths(), QVariantMap({{"/c.gguf", 1024}}));

        {
            arbor::Store store(file_);  // the service holds the file; a second connection still writes
            store.set_app_setting("engine.threads", "100000");
            store.set_app_setting("engine.kv_mib", "3");
            store.set_app_setting("engine.kv_disk_mib", "lots");
            store.set_app_setting("engine.kv_type", "");
        }
        AppSettings again(service);
        QVERIFY(loadInto(again));
        QCOMPARE(again.kvDiskMiB(), AppSettings::kDefaultKvDiskMiB);
        QCOMPARE(again.kvType(), QString("f16"));
        QCOMPARE(again.threads(), again.maxThreads());
        QCOMPARE(again.kvMemoryMiB(), 32);
    }

    void overrideWinsForTheRunOnly() {
        {
            arbor::Store store(file_);
            store.set_app_setting("model.path", "/models/stored.gguf");
        }
        {
            StoreService service(file_);
            service.open();
            AppSettings settings(service);
            settings.overrideModelPath("models/given-on-the-command-line.gguf");
            QVERIFY(loadInto(settings));
            QCOMPARE(settings.modelPath(), QString("models/given-on-the-command-line.gguf"));
            settings.setThreads(1);  // other writes go on as usual
        }
        QCOMPARE(stored(file_, "model.path"), std::optional<std::string>("/models/stored.gguf"));
        QCOMPARE(stored(file_, "engine.threads"), std::optional<std::string>("1"));

        StoreService service(file_);
        service.open();
        AppSettings settings(service);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.modelPath(), QString("/models/stored.gguf"));
    }

    void overrideStandsWhenTheDatabaseFails() {
        StoreService service(file_);  // never opened: the load job fails
        AppSettings settings(service);
        settings.overrideModelPath("models/override.gguf");
        QSignalSpy changed(&settings, &AppSettings::changed);
        QVERIFY(loadInto(settings));
        QCOMPARE(settings.modelPath(), QString("models/override.gguf"));
        QCOMPARE(settings.kvMemoryMiB(), 512);
        QCOMPARE(settings.theme(), QString("system"));
        // modelPath changed, so its NOTIFY signal is due (a view bound to it before the
        // load would otherwise keep showing the default path).
        QCOMPARE(changed.size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestAppSettings)
#include "test_app_settings.moc"
