#include "api_controller.h"

#include "api/api_server.h"
#include "api/request_guard.h"

#include <QHostAddress>
#include <QMetaObject>

#include <algorithm>
#include <optional>
#include <string>

namespace arbor::app {

namespace {

const char* const kEnabledKey = "api.enabled";
const char* const kHostKey = "api.host";
const char* const kPortKey = "api.port";
const char* const kLegacyApiKeyKey = "api.key";  // where versions before the secret store kept it
const char* const kApiKeySecret = "api-key";
const char* const kCorsKey = "api.cors_origins";
const char* const kAllowedHostsKey = "api.allowed_hosts";
const char* const kShareCacheKey = "api.share_cache";

struct StoredSettings {
    std::optional<std::string> enabled, host, port, key, cors, allowed_hosts, share_cache;
};

bool isTrue(const std::string& value) { return value == "true" || value == "1"; }

QString fromStd(const std::string& s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

// A comma-separated list (origins, host names), each entry trimmed, empty ones dropped.
std::vector<std::string> splitList(const QString& text) {
    std::vector<std::string> out;
    for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString origin = part.trimmed();
        if (!origin.isEmpty()) out.push_back(origin.toStdString());
    }
    return out;
}

// The host a client on this machine puts in the URL: a wildcard address is reached
// through loopback; IPv6 literals are bracketed.
QString urlHost(const QHostAddress& address) {
    if (address == QHostAddress(QHostAddress::AnyIPv4)) return QStringLiteral("127.0.0.1");
    if (address == QHostAddress(QHostAddress::AnyIPv6)) return QStringLiteral("[::1]");
    if (address.protocol() == QAbstractSocket::IPv6Protocol) return QLatin1Char('[') + address.toString() + QLatin1Char(']');
    return address.toString();
}

} // namespace

// Lives on the controller's thread; owns the running server and the model it serves.
class ApiWorker : public QObject {
public:
    ~ApiWorker() override { stop(); }

    void stop() {
        server_.reset();  // joins the connection threads, which use the engine
        model_.reset();
    }

    // Starts a server; returns the port it listens on, or the reason it could not.
    std::optional<int> start(std::shared_ptr<LoadedModel> model, const arbor::api::ApiServerOptions& options,
                             QString& error) {
        try {
            auto server = std::make_unique<arbor::api::ApiServer>(*model->engine, *model->model, options);
            server->start();
            const int port = server->port();
            server_ = std::move(server);
            model_ = std::move(model);
            return port;
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
            return std::nullopt;
        }
    }

private:
    std::shared_ptr<LoadedModel> model_;  // held while server_ runs; declared first, so it goes last
    std::unique_ptr<arbor::api::ApiServer> server_;
};

ApiController::ApiController(StoreService& store, SecretStore& secrets, QObject* parent)
    : QObject(parent), store_(store), secrets_(secrets), worker_(new ApiWorker) {
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    thread_.setObjectName(QStringLiteral("arbor-api"));
    thread_.start();
}

ApiController::~ApiController() {
    // Our reference to the model goes with a job to the worker thread: run or dropped
    // unrun, it is released there, never here.
    if (model_) QMetaObject::invokeMethod(worker_, [m = std::move(model_)]() mutable { m.reset(); }, Qt::QueuedConnection);
    // The worker stops its server in its destructor, on its own thread, once the loop ends.
    thread_.quit();
    thread_.wait();
}

bool ApiController::exposed() const {
    QHostAddress address;
    return address.setAddress(host_) && !address.isLoopback();
}

void ApiController::load() {
    store_.call(
        this,
        [](arbor::Store& s) {
            StoredSettings r;
            r.enabled = s.app_setting(kEnabledKey);
            r.host = s.app_setting(kHostKey);
            r.port = s.app_setting(kPortKey);
            r.key = s.app_setting(kLegacyApiKeyKey);
            r.cors = s.app_setting(kCorsKey);
            r.allowed_hosts = s.app_setting(kAllowedHostsKey);
            r.share_cache = s.app_setting(kShareCacheKey);
            return r;
        },
        [this](StoredSettings r) {
            if (r.enabled && isTrue(*r.enabled) != enabled_) {
                enabled_ = !enabled_;
                emit enabledChanged();
            }
            if (r.host && fromStd(*r.host) != host_) {
                host_ = fromStd(*r.host);
                emit hostChanged();
            }
            bool ok = false;
            const int port = r.port ? fromStd(*r.port).toInt(&ok) : 0;
            if (ok && port != port_) {
                port_ = port;
                emit portChanged();
            }
            if (const QString key = loadApiKey(r.key); key != apiKey_) {
                apiKey_ = key;
                emit apiKeyChanged();
            }
            if (r.cors && fromStd(*r.cors) != corsOrigins_) {
                corsOrigins_ = fromStd(*r.cors);
                emit corsOriginsChanged();
            }
            if (r.allowed_hosts && fromStd(*r.allowed_hosts) != allowedHosts_) {
                allowedHosts_ = fromStd(*r.allowed_hosts);
                emit allowedHostsChanged();
            }
            if (r.share_cache && isTrue(*r.share_cache) != shareCache_) {
                shareCache_ = !shareCache_;
                emit shareCacheChanged();
            }
            restart();
            emit loaded();
        },
        [this](const QString& message) {
            emit settingsError(message);
            emit loaded();
        });
}

void ApiController::setModel(std::shared_ptr<LoadedModel> model) {
    if (model == model_) return;
    std::swap(model, model_);
    // The previous model may be the last reference: release it on the worker thread,
    // since destroying an engine joins its loop thread.
    if (model) QMetaObject::invokeMethod(worker_, [m = std::move(model)]() mutable { m.reset(); }, Qt::QueuedConnection);
    restart();
}

void ApiController::setEnabled(bool enabled) {
    if (enabled == enabled_) return;
    enabled_ = enabled;
    persist(kEnabledKey, enabled ? QStringLiteral("true") : QStringLiteral("false"));
    emit enabledChanged();
    restart();
}

void ApiController::setHost(const QString& host) {
    const QString h = host.trimmed();
    if (h == host_) return;
    host_ = h;
    persist(kHostKey, h);
    emit hostChanged();
    restart();
}

void ApiController::setPort(int port) {
    if (port == port_) return;
    port_ = port;
    persist(kPortKey, QString::number(port));
    emit portChanged();
    restart();
}

void ApiController::setApiKey(const QString& key) {
    const QString k = key.trimmed();
    if (k == apiKey_) return;
    try {
        secrets_.write(kApiKeySecret, k.toStdString());
    } catch (const std::exception& e) {
        emit settingsError(tr("The API key could not be stored: %1").arg(QString::fromUtf8(e.what())));
    }
    apiKey_ = k;
    emit apiKeyChanged();
    restart();
}

void ApiController::setCorsOrigins(const QString& origins) {
    const QString o = origins.trimmed();
    if (o == corsOrigins_) return;
    corsOrigins_ = o;
    persist(kCorsKey, o);
    emit corsOriginsChanged();
    restart();
}

void ApiController::setAllowedHosts(const QString& hosts) {
    const QString h = hosts.trimmed();
    if (h == allowedHosts_) return;
    allowedHosts_ = h;
    persist(kAllowedHostsKey, h);
    emit allowedHostsChanged();
    restart();
}

void ApiController::setShareCache(bool share) {
    if (share == shareCache_) return;
    shareCache_ = share;
    persist(kShareCacheKey, share ? QStringLiteral("true") : QStringLiteral("false"));
    emit shareCacheChanged();
    restart();
}

QString ApiController::loadApiKey(const std::optional<std::string>& stored) {
    try {
        if (!stored) return fromStd(secrets_.read(kApiKeySecret).value_or(std::string()));
        // Moved out of the database, and deleted there only once the secret store has it.
        if (!stored->empty()) secrets_.write(kApiKeySecret, *stored);
        store_.call(
            this, [](arbor::Store& s) { s.remove_app_setting(kLegacyApiKeyKey); }, [] {},
            [this](const QString& message) { emit settingsError(message); });
        return stored->empty() ? fromStd(secrets_.read(kApiKeySecret).value_or(std::string())) : fromStd(*stored);
    } catch (const std::exception& e) {
        emit settingsError(tr("The API key could not be read: %1").arg(QString::fromUtf8(e.what())));
        return stored ? fromStd(*stored) : apiKey_;
    }
}

void ApiController::persist(const char* key, const QString& value) {
    store_.call(
        this, [key = std::string(key), value = value.toStdString()](arbor::Store& s) { s.set_app_setting(key, value); },
        [] {}, [this](const QString& message) { emit settingsError(message); });
}

void ApiController::restart() {
    const quint64 generation = ++generation_;
    bool run = false;
    QString reason;  // why an enabled server will not run
    arbor::api::ApiServerOptions options;
    if (enabled_) {
        QHostAddress address;
        const std::vector<std::string> allowedHosts = splitList(allowedHosts_);
        const auto badHost = std::find_if(allowedHosts.begin(), allowedHosts.end(),
                                          [](const std::string& h) { return !arbor::api::valid_allowed_host(h); });
        if (port_ < 1 || port_ > 65535)
            reason = tr("port %1 cannot be used: choose one from 1 to 65535").arg(port_);
        else if (!address.setAddress(host_))
            reason = tr("'%1' is not an IP address (for this machine only: 127.0.0.1)").arg(host_);
        else if (badHost != allowedHosts.end())
            reason = tr("'%1' is not a host name or address (allowed hosts: names without ports, separated by commas)")
                         .arg(fromStd(*badHost));
        else if (!model_ || !model_->model || !model_->engine)
            reason = tr("no model loaded");
        else {
            run = true;
            options.host = address.toString().toStdString();
            options.port = uint16_t(port_);
            options.api_key = apiKey_.toStdString();
            options.allowed_origins = splitList(corsOrigins_);
            options.allowed_hosts = allowedHosts;
            options.share_app_cache = shareCache_;
            if (!model_->name.isEmpty()) options.model_id = model_->name.toStdString();
        }
    }
    // The old server is going away whatever comes next.
    setStatus(false, QString(), reason);

    std::shared_ptr<LoadedModel> model = run ? model_ : nullptr;
    ApiWorker* const worker = worker_;
    QMetaObject::invokeMethod(
        worker_,
        [this, worker, generation, run, options = std::move(options), model = std::move(model)]() mutable {
            worker->stop();
            if (!run) return;
            QString error;
            const auto port = worker->start(std::move(model), options, error);
            // The controller waits for this thread before it goes, so `this` is alive here;
            // an answer it has not processed by then is discarded with it.
            QMetaObject::invokeMethod(
                this, [this, generation, port, error] { applyStatus(generation, port.has_value(), port.value_or(0), error); },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
}

void ApiController::applyStatus(quint64 generation, bool listening, int port, const QString& error) {
    if (generation != generation_) return;  // a later restart is under way
    QString url;
    if (listening) {
        QHostAddress address;
        address.setAddress(host_);
        url = QStringLiteral("http://%1:%2/v1").arg(urlHost(address)).arg(port);
    }
    setStatus(listening, url, error);
}

void ApiController::setStatus(bool listening, const QString& url, const QString& error) {
    if (listening == listening_ && url == url_ && error == error_) return;
    listening_ = listening;
    url_ = url;
    error_ = error;
    emit statusChanged();
}

} // namespace arbor::app
