#include "model_download.h"

#include "hf_hub_client.h"
#include "model_fit.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStorageInfo>

#include <filesystem>

namespace arbor::app {

namespace {

QString sizeText(qint64 bytes) { return QString::fromStdString(byteSizeText(uint64_t(std::max<qint64>(bytes, 0)))); }

// A request to a server other than the Hub: the Hugging Face token never goes there.
QNetworkRequest otherServerRequest(const QUrl& url) {
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Arbor"));
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    return r;
}

} // namespace

QByteArray DownloadSpec::toJson() const {
    return QJsonDocument(QJsonObject{{"repository", repository},
                                     {"file", file},
                                     {"size", double(size)},
                                     {"sha256", sha256},
                                     {"destination", destination},
                                     {"etag", etag},
                                     {"url", url}})
        .toJson();
}

std::optional<DownloadSpec> DownloadSpec::fromJson(const QByteArray& json, QString* problem) {
    const QJsonObject o = QJsonDocument::fromJson(json).object();
    DownloadSpec s;
    s.repository = o.value("repository").toString();
    s.file = o.value("file").toString();
    s.size = qint64(o.value("size").toDouble());
    s.sha256 = o.value("sha256").toString();
    s.destination = o.value("destination").toString();
    s.etag = o.value("etag").toString();
    s.url = o.value("url").toString();
    if (s.repository.isEmpty() || s.file.isEmpty() || s.destination.isEmpty() || s.size < 0) {
        if (problem) *problem = QObject::tr("the download's description is incomplete or unreadable");
        return std::nullopt;
    }
    return s;
}

ModelDownload::ModelDownload(DownloadSpec spec, HfHubClient& hub, QObject* parent)
    : QObject(parent), spec_(std::move(spec)), hub_(hub) {
    received_ = std::max<qint64>(QFileInfo(spec_.partPath()).size(), 0);
}

ModelDownload::~ModelDownload() { stopReply(); }

QString ModelDownload::fileName() const { return QFileInfo(spec_.destination).fileName(); }

int ModelDownload::secondsLeft() const {
    if (state_ != State::Downloading || speed_ <= 0 || spec_.size <= 0) return -1;
    return int(double(spec_.size - received_) / speed_ + 0.5);
}

void ModelDownload::setState(State state) {
    if (state == state_) return;
    state_ = state;
    if (state != State::Downloading) speed_ = 0;
    emit changed();
    emit progress();
}

bool ModelDownload::writeSidecar() {
    QSaveFile f(spec_.sidecarPath());
    return f.open(QIODevice::WriteOnly) && f.write(spec_.toJson()) >= 0 && f.commit();
}

bool ModelDownload::openPart() {
    part_.close();
    part_.setFileName(spec_.partPath());
    hash_.reset();
    received_ = 0;
    if (part_.exists()) {
        if (!part_.open(QIODevice::ReadOnly)) return false;
        // What arrived before (this run or an earlier one) counts towards the checksum.
        if (!hash_.addData(&part_)) return false;
        received_ = part_.size();
        part_.close();
    }
    return part_.open(QIODevice::WriteOnly | QIODevice::Append);
}

void ModelDownload::start() {
    if (state_ != State::Paused && state_ != State::Failed) return;
    error_.clear();
    if (!writeSidecar()) return fail(tr("Cannot write %1.").arg(spec_.sidecarPath()));
    if (!openPart()) return fail(tr("Cannot open %1: %2").arg(spec_.partPath(), part_.errorString()));
    if (spec_.size > 0 && received_ > spec_.size) {  // not the file we are after: start over
        part_.resize(0);
        hash_.reset();
        received_ = 0;
    }
    const QStorageInfo disk(QFileInfo(spec_.destination).absolutePath());
    const qint64 needed = std::max<qint64>(spec_.size - received_, 0) + kSpareBytes;
    if (disk.isValid() && disk.bytesAvailable() < needed)
        return fail(tr("Not enough disk space for %1: %2 more needed, %3 free.")
                        .arg(fileName(), sizeText(needed), sizeText(disk.bytesAvailable())));
    setState(State::Downloading);
    if (spec_.size > 0 && received_ == spec_.size) return verifyAndMove();

    QNetworkRequest request = spec_.url.isEmpty() ? hub_.request(hub_.fileUrl(spec_.repository, spec_.file))
                                                  : otherServerRequest(QUrl(spec_.url));
    requestedFrom_ = received_;
    if (received_ > 0) {
        request.setRawHeader("Range", "bytes=" + QByteArray::number(received_) + "-");
        // A file changed on the Hub since comes back whole (200) instead of the rest.
        if (!spec_.etag.isEmpty()) request.setRawHeader("If-Range", spec_.etag.toUtf8());
    }
    checkedResponse_ = false;
    reply_ = hub_.network().get(request);
    connect(reply_, &QNetworkReply::readyRead, this, &ModelDownload::readyRead);
    connect(reply_, &QNetworkReply::finished, this, &ModelDownload::replyFinished);
    speedClock_.start();
    speedMarkBytes_ = received_;
}

void ModelDownload::readyRead() {
    if (!reply_ || state_ != State::Downloading) return;
    const int status = reply_->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 300) return;  // an error page (or a redirect's body): replyFinished says why
    if (!checkedResponse_) {
        checkedResponse_ = true;
        if (status == 206) {
            static const QRegularExpression range(QStringLiteral("^bytes (\\d+)-"));
            const auto m = range.match(QString::fromLatin1(reply_->rawHeader("Content-Range")));
            if (!m.hasMatch() || m.captured(1).toLongLong() != requestedFrom_)
                return fail(tr("The Hub sent another part of %1 than the one asked for.").arg(fileName()));
        } else if (received_ > 0) {
            // The whole file came instead of the rest: it changed, or the server ignores
            // ranges. Start over.
            part_.resize(0);
            hash_.reset();
            received_ = 0;
        }
        const QString etag = QString::fromLatin1(reply_->rawHeader("ETag"));
        if (spec_.etag.isEmpty() && !etag.isEmpty()) {
            spec_.etag = etag;
            writeSidecar();
        }
    }
    const QByteArray data = reply_->readAll();
    if (part_.write(data) != data.size())
        return fail(tr("Cannot write %1: %2").arg(spec_.partPath(), part_.errorString()));
    hash_.addData(data);
    received_ += data.size();
    if (spec_.size > 0 && received_ > spec_.size)
        return fail(tr("The Hub sent more than the %1 bytes %2 should have.").arg(spec_.size).arg(fileName()));
    if (speedClock_.elapsed() >= kSpeedWindowMs) {
        speed_ = double(received_ - speedMarkBytes_) * 1000.0 / double(speedClock_.restart());
        speedMarkBytes_ = received_;
    }
    emit progress();
}

void ModelDownload::replyFinished() {
    if (!reply_ || state_ != State::Downloading) return;
    readyRead();  // whatever is left in the buffer
    if (!reply_ || state_ != State::Downloading) return;
    QNetworkReply* reply = reply_;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QString what = spec_.repository + "/" + spec_.file;
    if (status == 416) {
        // The server holds less than the partial file: it is not the same file.
        part_.resize(0);
        hash_.reset();
        received_ = 0;
        return fail(tr("The partial download of %1 does not match the Hub's file and was discarded; resume to "
                       "start again.").arg(fileName()));
    }
    if (status >= 400 && !spec_.url.isEmpty())
        return fail(tr("%1 answered %2 for %3.").arg(QUrl(spec_.url).host()).arg(status).arg(fileName()));
    if (status >= 400) return fail(HfHubClient::httpProblem(status, what, !reply->request().rawHeader("Authorization").isEmpty()));
    if (reply->error() != QNetworkReply::NoError)
        return fail(tr("The download of %1 stopped: %2. Resume to continue from %3.")
                        .arg(fileName(), reply->errorString(), sizeText(received_)));
    if (spec_.size > 0 && received_ < spec_.size)
        return fail(tr("The connection closed after %1 of %2 of %3; resume to continue.")
                        .arg(sizeText(received_), sizeText(spec_.size), fileName()));
    stopReply();
    verifyAndMove();
}

void ModelDownload::verifyAndMove() {
    setState(State::Verifying);
    if (!part_.flush()) return fail(tr("Cannot write %1: %2").arg(spec_.partPath(), part_.errorString()));
    part_.close();
    const QString actual = QString::fromLatin1(hash_.result().toHex());
    if (!spec_.sha256.isEmpty() && actual != spec_.sha256) {
        QFile::remove(spec_.partPath());
        QFile::remove(spec_.sidecarPath());
        received_ = 0;
        const QString source = spec_.url.isEmpty() ? tr("the Hub's") : tr("%1's").arg(QUrl(spec_.url).host());
        return fail(tr("%1 does not match %2 sha256 (expected %3, got %4); the download was discarded.")
                        .arg(fileName(), source, spec_.sha256, actual));
    }
    std::error_code ec;
    // rename(2) replaces the target in one step: readers see the old file or the new one.
    std::filesystem::rename(spec_.partPath().toStdString(), spec_.destination.toStdString(), ec);
    if (ec) return fail(tr("Cannot move %1 into place: %2").arg(fileName(), QString::fromStdString(ec.message())));
    QFile::remove(spec_.sidecarPath());
    setState(State::Finished);
    emit finished();
}

void ModelDownload::fail(const QString& reason) {
    stopReply();
    part_.close();
    error_ = reason;
    if (state_ == State::Failed) {
        emit changed();
        return;
    }
    setState(State::Failed);
}

void ModelDownload::pause() {
    if (state_ != State::Downloading) return;
    stopReply();
    part_.close();
    setState(State::Paused);
}

void ModelDownload::cancel() {
    if (state_ == State::Finished || state_ == State::Cancelled) return;
    stopReply();
    part_.close();
    QFile::remove(spec_.partPath());
    QFile::remove(spec_.sidecarPath());
    received_ = 0;
    setState(State::Cancelled);
}

void ModelDownload::stopReply() {
    if (!reply_) return;
    QNetworkReply* reply = reply_;
    reply_ = nullptr;
    disconnect(reply, nullptr, this, nullptr);
    reply->abort();
    reply->deleteLater();
}

} // namespace arbor::app
