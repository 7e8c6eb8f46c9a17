// The .deb that `cpack -G DEB` makes from this build: its control fields (the libraries the
// programs link and the QML modules and platform plugin they load at run time), its exact
// contents (with CUDA, the CUDA backend library, on which nothing depends), its desktop
// entry and icon, and its programs run from the unpacked package (the app opens its
// window and loads the default model, and the CLI uses the GPU or says why not, on a
// machine without an NVIDIA driver too). Skips, saying why, where dpkg
// is not available.
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QLibraryInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

namespace {

struct Run {
    int code = -1;
    QString out, err;
};

Run run(const QString& program, const QStringList& args, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForStarted() || !p.waitForFinished(120000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

// The Debian package that installed `path` on this machine, or an empty string.
QString owningPackage(const QString& path) {
    const Run r = run(QStringLiteral("dpkg-query"), {"-S", path});
    if (r.code != 0) return {};
    return r.out.section(QLatin1Char(':'), 0, 0).trimmed();
}

} // namespace

class TestDebPackage : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString deb_, root_;  // the package file, and where it is unpacked
    QString dpkgDeb_;

    QString field(const QString& name) {
        const Run r = run(dpkgDeb_, {"--field", deb_, name});
        return r.out.trimmed();
    }
    QStringList depends() {
        QStringList names;
        for (const QString& d : field("Depends").split(QLatin1Char(','), Qt::SkipEmptyParts))
            names << d.trimmed().section(QLatin1Char(' '), 0, 0);
        return names;
    }

private slots:
    void initTestCase() {
        dpkgDeb_ = QStandardPaths::findExecutable(QStringLiteral("dpkg-deb"));
        if (dpkgDeb_.isEmpty() || QStandardPaths::findExecutable(QStringLiteral("dpkg-shlibdeps")).isEmpty())
            QSKIP("dpkg-deb and dpkg-shlibdeps are needed to build the .deb (Debian's dpkg and dpkg-dev)");
        QVERIFY(dir_.isValid());
        const Run made = run(QStringLiteral(ARBOR_CPACK),
                             {"-G", "DEB", "--config", QStringLiteral(ARBOR_BUILD_DIR "/CPackConfig.cmake"), "-B",
                              dir_.path()});
        QVERIFY2(made.code == 0, qPrintable(made.out + made.err));
        const QStringList debs = QDir(dir_.path()).entryList({"*.deb"}, QDir::Files);
        QCOMPARE(debs.size(), 1);
        deb_ = dir_.filePath(debs.front());
        root_ = dir_.filePath("root");
        const Run unpacked = run(dpkgDeb_, {"--extract", deb_, root_});
        QVERIFY2(unpacked.code == 0, qPrintable(unpacked.err));
    }

    void controlFieldsNameTheVersionAndLinkedLibraries() {
        QCOMPARE(field("Package"), QString("arbor"));
        QCOMPARE(field("Version"), QString(ARBOR_VERSION));
        QVERIFY(!field("Architecture").isEmpty());
        QVERIFY(!field("Maintainer").isEmpty());
        // dpkg-shlibdeps found the packages of the shared libraries the programs link.
        const QStringList deps = depends();
        for (const char* lib : {"libqt6quick6", "libqt6qml6", "libqt6network6", "libsqlite3-0", "libc6"})
            QVERIFY2(deps.contains(QString(lib)), qPrintable(deps.join(", ")));
        QVERIFY2(deps.filter(QRegularExpression("^libspdlog")).size() == 1, qPrintable(deps.join(", ")));
        // The default model's download is C++: libzip reads the wheel; no Python, no unzip.
        QVERIFY2(deps.contains(QString("libzip4")), qPrintable(deps.join(", ")));
        for (const char* tool : {"python3-venv", "python3", "unzip"})
            QVERIFY2(!deps.contains(QString(tool)), qPrintable(deps.join(", ")));
        // Nor the CUDA runtime and cuBLAS that libarbor_cuda.so links (in a build with CUDA):
        // the package installs without them, and the programs then run on the CPU.
        const QRegularExpression cuda(QStringLiteral("cuda|cublas|nvidia"), QRegularExpression::CaseInsensitiveOption);
        QVERIFY2(deps.filter(cuda).isEmpty(), qPrintable(deps.join(", ")));
    }

    // Run-time loads are invisible to dpkg-shlibdeps: every module the views import and
    // the X11 platform plugin must come from a package the .deb depends on. The owners are
    // looked up on this machine, where the build found them.
    void dependsOnWhatTheViewsLoadAtRunTime() {
        const QStringList deps = depends();
        QSet<QString> imports;
        const QRegularExpression importLine(QStringLiteral(R"(^import\s+([A-Za-z][\w.]*))"),
                                            QRegularExpression::MultilineOption);
        const QDir ui(QStringLiteral(ARBOR_SOURCE_DIR "/ui"));
        for (const QString& name : ui.entryList({"*.qml"}, QDir::Files)) {
            QFile f(ui.filePath(name));
            QVERIFY(f.open(QIODevice::ReadOnly));
            for (auto it = importLine.globalMatch(QString::fromUtf8(f.readAll())); it.hasNext();) {
                const QString module = it.next().captured(1);
                if (!module.startsWith(QLatin1String("Arbor."))) imports.insert(module);
            }
        }
        QVERIFY(imports.contains("QtQuick.Controls") && imports.contains("QtQuick.Dialogs"));
        QStringList files;
        for (const QString& module : imports)
            files << QLibraryInfo::path(QLibraryInfo::QmlImportsPath) + "/" + QString(module).replace('.', '/') + "/qmldir";
        files << QLibraryInfo::path(QLibraryInfo::PluginsPath) + "/platforms/libqxcb.so";
        for (const QString& file : files) {
            const QString owner = owningPackage(file);
            if (owner.isEmpty()) QSKIP(qPrintable("no installed package owns " + file + " (Qt not from Debian?)"));
            QVERIFY2(deps.contains(owner), qPrintable(file + " comes from " + owner + ", which Depends lacks"));
        }
    }

    void holdsExactlyTheProgramsTheEntryAndTheIcon() {
        const Run r = run(dpkgDeb_, {"--contents", deb_});
        QCOMPARE(r.code, 0);
        QStringList files;
        for (const QString& line : r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            if (!line.startsWith(QLatin1Char('d'))) files << line.section(QLatin1Char(' '), -1).remove(0, 1);
        files.sort();
        QStringList expected{"/usr/bin/arbor", "/usr/bin/arbor-cli", "/usr/bin/arbor-download-model",
                             "/usr/bin/arbor-server", "/usr/share/applications/arbor.desktop",
                             "/usr/share/icons/hicolor/scalable/apps/arbor.svg"};
#ifdef ARBOR_TEST_HAVE_CUDA
        expected << "/usr/lib/arbor/libarbor_cuda.so";  // where the programs look for it (../lib/arbor)
        expected.sort();
#endif
        QCOMPARE(files, expected);
    }

    void desktopEntryStartsThePackagedAppWithItsIcon() {
        const QString entry = root_ + "/usr/share/applications/arbor.desktop";
        QSettings desktop(entry, QSettings::IniFormat);
        desktop.beginGroup("Desktop Entry");
        QCOMPARE(desktop.value("Type").toString(), QString("Application"));
        QCOMPARE(desktop.value("Name").toString(), QString("Arbor"));
        QCOMPARE(desktop.value("Terminal").toString(), QString("false"));
        const QString exec = desktop.value("Exec").toString().section(QLatin1Char(' '), 0, 0);
        QVERIFY2(QFileInfo(root_ + "/usr/bin/" + exec).isExecutable(), qPrintable(exec));
        const QString icon = desktop.value("Icon").toString();
        QFile svg(root_ + "/usr/share/icons/hicolor/scalable/apps/" + icon + ".svg");
        QVERIFY2(svg.open(QIODevice::ReadOnly), qPrintable(icon));
        QXmlStreamReader xml(&svg);
        QVERIFY(xml.readNextStartElement());
        QCOMPARE(xml.name().toString(), QString("svg"));
        while (!xml.atEnd()) xml.readNext();
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        const QString validate = QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
        if (validate.isEmpty()) QSKIP("desktop-file-validate not installed (Debian's desktop-file-utils)");
        const Run r = run(validate, {entry});
        QVERIFY2(r.code == 0 && r.out.trimmed().isEmpty(), qPrintable(r.out + r.err));
    }

    void packagedProgramsRun() {
        const QString bin = root_ + "/usr/bin/";
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        const Run version = run(bin + "arbor", {"--version"}, env);
        QCOMPARE(version.code, 0);
        QCOMPARE(version.out.trimmed(), QString("Arbor " ARBOR_VERSION));
        for (const char* program : {"arbor-cli", "arbor-server", "arbor-download-model"}) {
            const Run help = run(bin + program, {"--help"});
            QVERIFY2(help.code == 0 && help.out.contains("usage", Qt::CaseInsensitive), qPrintable(help.out + help.err));
        }
        // The packaged CLI generates with the default model.
        const QString model = QString::fromStdString(arbor::test::model_path().string());
        const Run generated = run(bin + "arbor-cli", {"generate", "--model", model, "--prompt", "The capital of France is",
                                                      "-n", "4", "--temp", "0"});
        QVERIFY2(generated.code == 0 && generated.out.contains("Paris"), qPrintable(generated.out + generated.err));
    }

#ifdef ARBOR_TEST_HAVE_CUDA
    // The packaged CLI opens the packaged CUDA backend: `--device auto` generates, on the
    // GPU or on the CPU saying why not; where it said why, `--device cuda` is refused with
    // that reason and exit status 1, else it generates on the GPU.
    void packagedCliRunsOnTheGpuOrSaysWhyNot() {
        const QString cli = root_ + "/usr/bin/arbor-cli";
        const QString model = QString::fromStdString(arbor::test::model_path().string());
        const QStringList generate{"generate", "--model", model, "--prompt", "The capital of France is",
                                   "-n", "4", "--temp", "0", "--device"};
        const Run automatic = run(cli, generate + QStringList{"auto"});
        QVERIFY2(automatic.code == 0 && automatic.out.contains("Paris"), qPrintable(automatic.out + automatic.err));
        const Run gpu = run(cli, generate + QStringList{"cuda"});
        static const QRegularExpression noGpu(QStringLiteral("no GPU used: ([^\n]+)"));
        const QRegularExpressionMatch onCpu = noGpu.match(automatic.err);
        if (!onCpu.hasMatch()) {
            QVERIFY2(gpu.code == 0 && gpu.out.contains("Paris"), qPrintable(gpu.out + gpu.err));
            return;
        }
        const QString why = onCpu.captured(1).trimmed();
        QVERIFY2(!why.contains("libarbor_cuda.so not found") && !why.contains("could not be loaded"), qPrintable(why));
        QCOMPARE(gpu.code, 1);
        QVERIFY2(gpu.err.contains("device cuda unavailable: " + why), qPrintable(gpu.err));
        QVERIFY2(gpu.out.isEmpty(), qPrintable(gpu.out));
    }
#endif

    // The unpacked app, with fresh data and config directories, loads its QML from the
    // system's modules and the default model; it keeps running until stopped.
    void packagedAppOpensAndLoadsTheModel() {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QT_QPA_PLATFORM", "offscreen");
        env.insert("XDG_DATA_HOME", home.filePath("data"));
        env.insert("XDG_CONFIG_HOME", home.filePath("config"));
        env.insert("ARBOR_MODEL", QString::fromStdString(arbor::test::model_path().string()));
        QProcess app;
        app.setProcessEnvironment(env);
        app.setProcessChannelMode(QProcess::MergedChannels);
        app.start(root_ + "/usr/bin/arbor", QStringList{});
        QVERIFY(app.waitForStarted());
        QString log;
        QElapsedTimer waited;
        waited.start();
        while (!log.contains("packed") && app.state() == QProcess::Running && waited.elapsed() < 60000) {
            app.waitForReadyRead(500);
            log += QString::fromUtf8(app.readAll());
        }
        const bool running = app.state() == QProcess::Running;
        app.terminate();
        if (!app.waitForFinished(10000)) app.kill();
        QVERIFY2(running, qPrintable("the app exited: " + log));
        QVERIFY2(log.contains("packed"), qPrintable(log));
        QVERIFY2(!log.contains("QQmlApplicationEngine failed"), qPrintable(log));
#ifdef ARBOR_TEST_HAVE_CUDA
        // It found the packaged CUDA backend (the Device setting's default is "auto"): it
        // runs on the GPU, or on the CPU for a reason other than a missing library.
        QVERIFY2(!log.contains("libarbor_cuda.so not found") && !log.contains("could not be loaded"), qPrintable(log));
#endif
        QVERIFY(QFileInfo::exists(home.filePath("data/arbor")));  // its database went to the fresh data dir
    }
};

QTEST_GUILESS_MAIN(TestDebPackage)
#include "test_deb_package.moc"
