// The OpenAI-compatible servers the user added (vLLM, SGLang, llama-server, Ollama,
// another Arbor): each a base URL, an optional API key and the models it lists at
// {base}/models. The base URLs are an app setting in the store (remote.endpoints, a JSON
// array); each key is kept like the app's other secrets (secret_store.h: the keyring, else
// a private file), never in the database. Conversations name a model of one as a
// RemoteModelRef; start() begins a streamed reply from it (remote_chat_stream.h) with
// the endpoint's key.
#pragma once

#include "remote_chat_stream.h"
#include "remote_model_ref.h"
#include "store_worker.h"

#include <QList>
#include <QNetworkAccessManager>
#include <QObject>
#include <QStringList>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class SecretStore;

class RemoteEndpoints : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    // [{url, host, hasKey, models: [{ref, id, label}], error, listing}], in the order added.
    // `error` says why the models could not be listed (or the key read); `listing` is true
    // while they are fetched.
    Q_PROPERTY(QVariantList endpoints READ endpoints NOTIFY changed)
    // Every model of every endpoint, [{ref, id, label}] ("id @ host"), for the picker.
    Q_PROPERTY(QVariantList models READ models NOTIFY changed)
public:
    static constexpr const char* kSettingKey = "remote.endpoints";
    // How long a server may send nothing before a reply is given up (a first token after a
    // long prompt on a busy server can take a while).
    static constexpr int kDefaultStallMs = 120000;
    static constexpr int kListTimeoutMs = 20000;

    // `secrets` may be null: keys are then kept for this run only.
    RemoteEndpoints(StoreService& store, SecretStore* secrets, QObject* parent = nullptr);

    QVariantList endpoints() const;
    QVariantList models() const;

    // Reads the stored endpoints and lists their models.
    void load();
    // Adds the server at `url` (see normalizedBaseUrl) with `key` (empty: none), or gives an
    // endpoint already added a new key, and lists its models. Returns why it cannot, ""
    // when it was added.
    Q_INVOKABLE QString add(const QString& url, const QString& key);
    Q_INVOKABLE void remove(const QString& url);
    Q_INVOKABLE void refresh(const QString& url);  // lists its models again

    // A streamed reply from `model`, with its endpoint's key (none for an endpoint no longer
    // added). The Reply belongs to this object until it finishes.
    Reply* start(const RemoteModelRef& model, const QJsonArray& messages, const arbor::GenerateOptions& options);
    void setStallMs(int ms) { stallMs_ = ms; }

signals:
    void changed();
    // The models of `url` were listed (or failed to be: see its error).
    void listed(const QString& url);

private:
    struct Endpoint {
        QUrl url;
        QString key;
        QStringList models;
        QString error;
        bool listing = false;
        quint64 listings = 0;  // only the newest listing is applied
    };
    Endpoint* find(const QUrl& url);
    void persist();
    void list(Endpoint& e);
    static std::string secretName(const QUrl& url);

    StoreService& store_;
    SecretStore* secrets_;
    QNetworkAccessManager network_;
    QList<Endpoint> endpoints_;
    int stallMs_ = kDefaultStallMs;
};

} // namespace arbor::app
