// The Hugging Face Hub's HTTP API, as far as downloads need it: a repository's files
// with their sizes and LFS sha256 (GET {base}/api/models/{owner}/{name}/tree/main) and
// the address a file downloads from ({base}/{owner}/{name}/resolve/main/{path}). The base
// is https://huggingface.co unless $HF_ENDPOINT (the variable huggingface_hub reads) or
// the caller names another; tests point it at a local fake Hub.
#pragma once

#include <QNetworkAccessManager>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

#include <functional>

#include <QNetworkReply>

namespace arbor::app {

struct HubFile {
    QString path;
    qint64 size = 0;
    QString sha256;  // lowercase hex of the LFS object; empty for a file not in LFS
};

class HfHubClient : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(QString repository READ repository NOTIFY changed)  // of the last listing
    // The repository's .gguf files: [{path, size, sizeText, sha256}], by path.
    Q_PROPERTY(QVariantList files READ files NOTIFY changed)
    Q_PROPERTY(bool busy READ busy NOTIFY changed)
    Q_PROPERTY(QString error READ error NOTIFY changed)  // why the last listing failed
public:
    static QUrl defaultBaseUrl();  // $HF_ENDPOINT, else https://huggingface.co

    // `token`: called for each request; a non-empty result goes out as a bearer token.
    HfHubClient(QNetworkAccessManager& network, QUrl baseUrl, std::function<QString()> token,
                QObject* parent = nullptr);

    QUrl baseUrl() const { return base_; }
    QNetworkAccessManager& network() const { return network_; }
    QString repository() const { return repository_; }
    QVariantList files() const;
    QList<HubFile> ggufFiles() const { return files_; }
    bool busy() const { return reply_ != nullptr; }
    QString error() const { return error_; }

    // Why `repository` is not of the form owner/name ("" when it is).
    Q_INVOKABLE static QString repositoryProblem(const QString& repository);
    // Lists the repository's .gguf files; listed() follows, with error() set on failure.
    Q_INVOKABLE void list(const QString& repository);
    QUrl fileUrl(const QString& repository, const QString& path) const;
    // The request for `url` with the token, if any.
    QNetworkRequest request(const QUrl& url) const;

    // The reason shown for an HTTP failure of `what` (a repository or a file).
    static QString httpProblem(int status, const QString& what, bool hadToken);
    // The files of a tree listing's JSON that end in .gguf; `problem` set if it is not one.
    static QList<HubFile> parseTree(const QByteArray& json, QString* problem);

signals:
    void changed();
    void listed();

private:
    void finished();

    QNetworkAccessManager& network_;
    QUrl base_;
    std::function<QString()> token_;
    QString repository_;
    QList<HubFile> files_;
    QString error_;
    QPointer<QNetworkReply> reply_;
};

} // namespace arbor::app
