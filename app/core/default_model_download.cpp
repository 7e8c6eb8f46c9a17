#include "default_model_download.h"

#include <QCoreApplication>
#include <QProcess>
#include <QStandardPaths>

namespace arbor::app {

namespace {
constexpr auto kProgram = "arbor-download-model";

// The script's own message ("error: ...") is its last line on stderr.
QString lastLine(const QByteArray& output) {
    const QStringList lines = QString::fromUtf8(output).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QString line = lines.isEmpty() ? QString() : lines.back().trimmed();
    if (line.startsWith(QLatin1String("error: "))) line.remove(0, 7);
    return line;
}
} // namespace

DefaultModelDownload::DefaultModelDownload(QString program, QObject* parent)
    : QObject(parent), program_(std::move(program)) {}

DefaultModelDownload::~DefaultModelDownload() {
    if (process_) {
        // SIGTERM first: the script's exit trap then removes its temporary files.
        process_->disconnect(this);
        process_->terminate();
        if (!process_->waitForFinished(3000)) {
            process_->kill();
            process_->waitForFinished(3000);
        }
    }
}

QString DefaultModelDownload::findProgram() {
    const QString beside =
        QStandardPaths::findExecutable(QLatin1String(kProgram), {QCoreApplication::applicationDirPath()});
    return beside.isEmpty() ? QStandardPaths::findExecutable(QLatin1String(kProgram)) : beside;
}

void DefaultModelDownload::start() {
    if (process_ || program_.isEmpty()) return;
    error_.clear();
    process_ = new QProcess(this);
    process_->setProgram(program_);
    connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        const QString message = lastLine(process_->readAllStandardError());
        if (status == QProcess::NormalExit && code == 0) finish(true, {});
        else finish(false, message.isEmpty() ? tr("the download stopped (exit code %1)").arg(code) : message);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
        if (e == QProcess::FailedToStart) finish(false, tr("could not start %1").arg(program_));
    });
    process_->start();
    emit changed();
}

void DefaultModelDownload::finish(bool ok, const QString& error) {
    if (!process_) return;
    process_->deleteLater();
    process_ = nullptr;
    error_ = error;
    emit changed();
    if (ok) emit succeeded();
}

} // namespace arbor::app
