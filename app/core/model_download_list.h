// The downloads of the model library: the curated catalogue, the Hub client that lists
// any repository, and each download with its progress. Downloads land in the models
// directory; at start, the partial downloads a previous run left (their sidecars) come
// back paused, ready to resume. The optional Hugging Face token lives in the secret
// store, never in the database.
#pragma once

#include "hf_hub_client.h"
#include "model_download.h"

#include <QAbstractListModel>
#include <QNetworkAccessManager>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

#include <vector>

namespace arbor::app {

class SecretStore;

class ModelDownloadList : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(arbor::app::HfHubClient* hub READ hub CONSTANT)
    // resources/models/catalogue.json: [{repository, file, approxSize, licence, description, ...}]
    Q_PROPERTY(QVariantList catalogue READ catalogue CONSTANT)
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    Q_PROPERTY(bool hasToken READ hasToken NOTIFY tokenChanged)
    Q_PROPERTY(QString tokenError READ tokenError NOTIFY tokenChanged)
    // Why the last download asked for could not start; empty when it did.
    Q_PROPERTY(QString lastError READ lastError NOTIFY lastErrorChanged)
public:
    static constexpr const char* kTokenSecret = "huggingface-token";
    enum Roles { DownloadRole = Qt::UserRole + 1, FileNameRole, StateRole };

    // `secrets` may be null (no token can be kept); `baseUrl`: the Hub's address.
    ModelDownloadList(QString modelsDir, SecretStore* secrets, QUrl baseUrl, QObject* parent = nullptr);
    ~ModelDownloadList() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    HfHubClient* hub() const { return hub_.get(); }
    QVariantList catalogue() const { return catalogue_; }
    bool hasToken() const { return !token_.isEmpty(); }
    QString tokenError() const { return tokenError_; }
    QString lastError() const { return lastError_; }
    ModelDownload* at(int row) const;

    // Starts downloading `file` of `repository` into the models directory; returns why not
    // ("" when it started), also kept as lastError: a file of that name already there, or
    // already downloading.
    Q_INVOKABLE QString download(const QString& repository, const QString& file, qint64 size, const QString& sha256);
    // The same for a catalogue entry: its size and sha256 are asked of the Hub first, so
    // a file uploaded again since the catalogue was written is still checked. Failures
    // (the Hub's, or the file gone) land in lastError.
    Q_INVOKABLE void downloadFromHub(const QString& repository, const QString& file);
    // Takes a download that is no longer running out of the list.
    Q_INVOKABLE void dismiss(int row);
    // Stores the token (empty: forgets it); tokenError says why when it cannot be stored.
    Q_INVOKABLE void setToken(const QString& token);
    // Whether a file of `size` bytes fits in the available memory, by its weights alone
    // (the KV cache comes on top; the library shows it once the header is here):
    // {verdict, text}.
    Q_INVOKABLE QVariantMap fitForSize(qint64 size) const;

    // The catalogue file's entries, or an empty list with `problem` set.
    static QVariantList readCatalogue(const QString& path, QString* problem);

signals:
    void countChanged();
    void tokenChanged();
    void lastErrorChanged();
    // A download finished: the file is at `path`.
    void downloaded(const QString& path);

private:
    QString startDownload(const QString& repository, const QString& file, qint64 size, const QString& sha256);
    void setLastError(const QString& error);
    void add(DownloadSpec spec);
    // The partial downloads of an earlier run, paused.
    void restore();

    QString modelsDir_;
    SecretStore* secrets_;
    QString token_;
    QString tokenError_;
    QString lastError_;
    QNetworkAccessManager network_;
    std::unique_ptr<HfHubClient> hub_;
    QVariantList catalogue_;
    std::vector<ModelDownload*> downloads_;  // children of this
};

} // namespace arbor::app
