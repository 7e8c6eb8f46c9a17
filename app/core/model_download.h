// One model file coming from the Hub. The bytes go to "<final>.part", with
// "<final>.part.json" beside it naming what they are (repository, file, size, sha256,
// ETag), so a download paused, failed or cut off by the app closing resumes with an HTTP
// Range request where it stopped. The file is checked against the Hub's sha256 and only
// then renamed to its final name, in one atomic step: the final name never holds a
// partial or unchecked file.
#pragma once

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <QtQml/qqmlregistration.h>

#include <QNetworkReply>

namespace arbor::app {

class HfHubClient;

// What a download is, as its sidecar keeps it.
struct DownloadSpec {
    QString repository;
    QString file;         // path in the repository
    qint64 size = 0;      // bytes; 0 when unknown
    QString sha256;       // lowercase hex; empty: not checked (a file outside LFS)
    QString destination;  // the final path
    QString etag;         // of the first response; a resume asks for the same file
    QString url;          // where the bytes come from when not the Hub's resolve/main
                          // address of `file` (then no Hub token is sent)

    QString partPath() const { return destination + QStringLiteral(".part"); }
    QString sidecarPath() const { return destination + QStringLiteral(".part.json"); }
    QByteArray toJson() const;
    // nullopt with `problem` set when the sidecar is unreadable or incomplete.
    static std::optional<DownloadSpec> fromJson(const QByteArray& json, QString* problem);
};

class ModelDownload : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by the download list")
    Q_PROPERTY(State state READ state NOTIFY changed)
    Q_PROPERTY(QString fileName READ fileName CONSTANT)
    Q_PROPERTY(QString repository READ repository CONSTANT)
    Q_PROPERTY(qint64 receivedBytes READ receivedBytes NOTIFY progress)
    Q_PROPERTY(qint64 totalBytes READ totalBytes NOTIFY progress)
    Q_PROPERTY(double bytesPerSecond READ bytesPerSecond NOTIFY progress)
    Q_PROPERTY(int secondsLeft READ secondsLeft NOTIFY progress)  // -1 when unknown
    Q_PROPERTY(QString error READ error NOTIFY changed)
public:
    enum class State { Paused, Downloading, Verifying, Finished, Failed, Cancelled };
    Q_ENUM(State)

    // Free space kept beyond the file, so a download never fills the disk to the last byte.
    static constexpr qint64 kSpareBytes = 64 << 20;

    // A new download, or one resumed from its sidecar; nothing happens before start().
    ModelDownload(DownloadSpec spec, HfHubClient& hub, QObject* parent = nullptr);
    ~ModelDownload() override;

    const DownloadSpec& spec() const { return spec_; }
    State state() const { return state_; }
    QString fileName() const;
    QString repository() const { return spec_.repository; }
    qint64 receivedBytes() const { return received_; }
    qint64 totalBytes() const { return spec_.size; }
    double bytesPerSecond() const { return speed_; }
    int secondsLeft() const;
    QString error() const { return error_; }
    bool active() const { return state_ == State::Downloading || state_ == State::Verifying; }

    // Starts or resumes (Paused or Failed); no-op otherwise.
    Q_INVOKABLE void start();
    // Stops the transfer and keeps what arrived.
    Q_INVOKABLE void pause();
    // Stops and removes the partial file and its sidecar.
    Q_INVOKABLE void cancel();

signals:
    void changed();
    void progress();
    void finished();  // the file is in place under its final name

private:
    void readyRead();
    void replyFinished();
    void fail(const QString& reason);
    void verifyAndMove();
    bool writeSidecar();
    // Opens the part file for appending and hashes what it already holds.
    bool openPart();
    void stopReply();
    void setState(State state);

    DownloadSpec spec_;
    HfHubClient& hub_;
    State state_ = State::Paused;
    QString error_;
    QFile part_;
    QCryptographicHash hash_{QCryptographicHash::Sha256};
    QPointer<QNetworkReply> reply_;
    qint64 received_ = 0;
    qint64 requestedFrom_ = 0;  // the Range start of the current request
    bool checkedResponse_ = false;
    // Speed over the last kSpeedWindowMs.
    static constexpr int kSpeedWindowMs = 500;
    QElapsedTimer speedClock_;
    qint64 speedMarkBytes_ = 0;
    double speed_ = 0;
};

} // namespace arbor::app
