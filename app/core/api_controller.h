// The in-app switch for the local OpenAI-compatible API (engine/api/api_server.h).
//
// Settings, stored as app settings in the database and applied as soon as they change:
//   api.enabled       "true" / "false"; off by default
//   api.host          the IP address to listen on; 127.0.0.1 by default, so only this
//                     machine can connect. Any other address (0.0.0.0, a LAN address)
//                     sets `exposed` and the settings page warns.
//   api.port          1..65535; 8080 by default (the port OpenAI-compatible clients and
//                     arbor-server use unless told otherwise)
//   API key           not a database setting: kept in the SecretStore (the desktop
//                     keyring, else a file only the user can read) under "api-key";
//                     a key an older version left in the database (api.key) is moved
//                     there when the settings load. Empty: no key; otherwise requests
//                     without "Authorization: Bearer KEY" are answered 401 (/health
//                     excepted)
//   api.cors_origins  comma-separated origins allowed by CORS; "*" allows any; empty: none
//   api.allowed_hosts comma-separated host names (or addresses) answered besides
//                     localhost and the listening address; others get 421 (DNS
//                     rebinding); "*" answers any. Empty by default
//   api.share_cache   "true": API clients share one prefix cache with each other and
//                     with the app's conversations (so one can learn what another sent);
//                     "false" (default): each API key or bearer token has its own, the
//                     clients without one share another, and none reaches the app's
//
// The server runs while enabled and a model is set. Every change of a setting or of the
// model restarts it. Starting, stopping (which joins the connection threads) and
// destroying a server happen on the controller's own thread, which also holds the model
// while its server runs, so the engine outlives the server; the GUI thread never waits
// for them. The status comes back by queued signals, tagged with the restart it belongs
// to: a status from an earlier restart is ignored.
#pragma once

#include "loaded_model.h"
#include "secret_store.h"
#include "store_worker.h"

#include <QObject>
#include <QString>
#include <QThread>
#include <QtQml/qqmlregistration.h>

#include <memory>

namespace arbor::app {

class ApiWorker;

class ApiController : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(bool enabled READ enabled WRITE setEnabled NOTIFY enabledChanged)
    Q_PROPERTY(QString host READ host WRITE setHost NOTIFY hostChanged)
    Q_PROPERTY(int port READ port WRITE setPort NOTIFY portChanged)
    Q_PROPERTY(QString apiKey READ apiKey WRITE setApiKey NOTIFY apiKeyChanged)
    Q_PROPERTY(QString corsOrigins READ corsOrigins WRITE setCorsOrigins NOTIFY corsOriginsChanged)
    Q_PROPERTY(QString allowedHosts READ allowedHosts WRITE setAllowedHosts NOTIFY allowedHostsChanged)
    Q_PROPERTY(bool shareCache READ shareCache WRITE setShareCache NOTIFY shareCacheChanged)
    // host is a valid address other than a loopback one: other machines may connect.
    Q_PROPERTY(bool exposed READ exposed NOTIFY hostChanged)
    Q_PROPERTY(bool listening READ listening NOTIFY statusChanged)
    // The base URL for clients, e.g. http://127.0.0.1:8080/v1; empty while not listening.
    Q_PROPERTY(QString url READ url NOTIFY statusChanged)
    // Why the server is not listening although enabled (bad setting, no model, bind error).
    Q_PROPERTY(QString error READ error NOTIFY statusChanged)
public:
    static constexpr int kDefaultPort = 8080;
    static constexpr const char* kDefaultHost = "127.0.0.1";

    // The services must outlive the controller.
    ApiController(StoreService& store, SecretStore& secrets, QObject* parent = nullptr);
    ~ApiController() override;  // stops the server; waits for the controller's thread

    // Reads the settings from the store, applies them, then emits loaded() (also when
    // reading failed: settingsError() first, and the current values stay).
    void load();
    // The model to serve; null while none is loaded or while one is being switched.
    void setModel(std::shared_ptr<LoadedModel> model);

    bool enabled() const { return enabled_; }
    QString host() const { return host_; }
    int port() const { return port_; }
    QString apiKey() const { return apiKey_; }
    QString corsOrigins() const { return corsOrigins_; }
    QString allowedHosts() const { return allowedHosts_; }
    bool shareCache() const { return shareCache_; }
    bool exposed() const;
    bool listening() const { return listening_; }
    QString url() const { return url_; }
    QString error() const { return error_; }

    // Each setter stores its setting and restarts the server.
    void setEnabled(bool enabled);
    void setHost(const QString& host);
    void setPort(int port);
    void setApiKey(const QString& key);
    void setCorsOrigins(const QString& origins);
    void setAllowedHosts(const QString& hosts);
    void setShareCache(bool share);

signals:
    void enabledChanged();
    void hostChanged();
    void portChanged();
    void apiKeyChanged();
    void corsOriginsChanged();
    void allowedHostsChanged();
    void shareCacheChanged();
    void statusChanged();
    void loaded();
    void settingsError(const QString& message);  // the store could not read or write a setting

private:
    void persist(const char* key, const QString& value);
    // The key from the secret store; one still in the database (`stored`) is moved there first.
    QString loadApiKey(const std::optional<std::string>& stored);
    void restart();
    void applyStatus(quint64 generation, bool listening, int port, const QString& error);
    void setStatus(bool listening, const QString& url, const QString& error);

    StoreService& store_;
    SecretStore& secrets_;
    QThread thread_;
    ApiWorker* worker_;  // lives on thread_, deleted there when it finishes
    std::shared_ptr<LoadedModel> model_;
    quint64 generation_ = 0;  // the newest restart; older statuses are ignored

    bool enabled_ = false;
    QString host_ = QString::fromLatin1(kDefaultHost);
    int port_ = kDefaultPort;
    QString apiKey_;
    QString corsOrigins_;
    QString allowedHosts_;
    bool shareCache_ = false;

    bool listening_ = false;
    QString url_;
    QString error_;
};

} // namespace arbor::app
