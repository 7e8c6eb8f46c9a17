#include "remote_endpoints.h"

#include "secret_store.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QNetworkRequest>

namespace arbor::app {

RemoteEndpoints::RemoteEndpoints(StoreService& store, SecretStore* secrets, QObject* parent)
    : QObject(parent), store_(store), secrets_(secrets) {}

std::string RemoteEndpoints::secretName(const QUrl& url) {
    // A secret's name allows no ':' or '/': the URL's hash names its key.
    return "remote-key-" +
           QCryptographicHash::hash(url.toString().toUtf8(), QCryptographicHash::Sha256).toHex().left(16).toStdString();
}

RemoteEndpoints::Endpoint* RemoteEndpoints::find(const QUrl& url) {
    for (Endpoint& e : endpoints_)
        if (e.url == url) return &e;
    return nullptr;
}

QVariantList RemoteEndpoints::endpoints() const {
    QVariantList out;
    for (const Endpoint& e : endpoints_) {
        QVariantList models;
        for (const QString& id : e.models) {
            const RemoteModelRef ref{e.url, id};
            models.append(QVariantMap{{"ref", ref.toString()}, {"id", id}, {"label", ref.label()}});
        }
        out.append(QVariantMap{{"url", e.url.toString()},
                               {"host", hostLabel(e.url)},
                               {"hasKey", !e.key.isEmpty()},
                               {"models", models},
                               {"error", e.error},
                               {"listing", e.listing}});
    }
    return out;
}

QVariantList RemoteEndpoints::models() const {
    QVariantList out;
    for (const QVariant& e : endpoints()) out.append(e.toMap().value(QStringLiteral("models")).toList());
    return out;
}

void RemoteEndpoints::load() {
    store_.call(
        this, [](arbor::Store& s) { return s.app_setting(kSettingKey).value_or(std::string("[]")); },
        [this](const std::string& stored) {
            endpoints_.clear();
            for (const QJsonValue& v : QJsonDocument::fromJson(QByteArray::fromStdString(stored)).array()) {
                QString problem;
                const QUrl url = normalizedBaseUrl(v.toString(), &problem);
                if (url.isEmpty() || find(url)) continue;  // nothing stored by hand is guessed at
                Endpoint e;
                e.url = url;
                if (secrets_) {
                    try {
                        e.key = QString::fromStdString(secrets_->read(secretName(url)).value_or(std::string()));
                    } catch (const std::exception& error) {
                        e.error = tr("The API key cannot be read: %1").arg(QString::fromUtf8(error.what()));
                    }
                }
                endpoints_.append(e);
            }
            for (Endpoint& e : endpoints_)
                if (e.error.isEmpty()) list(e);
            emit changed();
        });
}

QString RemoteEndpoints::add(const QString& typed, const QString& key) {
    QString problem;
    const QUrl url = normalizedBaseUrl(typed, &problem);
    if (url.isEmpty()) return problem;
    if (secrets_) {
        try {
            secrets_->write(secretName(url), key.trimmed().toStdString());  // an empty key erases one
        } catch (const std::exception& error) {
            return tr("The API key cannot be stored: %1").arg(QString::fromUtf8(error.what()));
        }
    }
    Endpoint* e = find(url);
    if (!e) {
        endpoints_.append(Endpoint{url});
        e = &endpoints_.last();
        persist();
    }
    e->key = key.trimmed();
    e->error.clear();
    list(*e);
    emit changed();
    return {};
}

void RemoteEndpoints::remove(const QString& typed) {
    const QUrl url = normalizedBaseUrl(typed, nullptr);
    for (qsizetype i = 0; i < endpoints_.size(); ++i) {
        if (endpoints_[i].url != url) continue;
        endpoints_.removeAt(i);
        if (secrets_) {
            try {
                secrets_->write(secretName(url), {});
            } catch (const std::exception&) {
                // The endpoint is gone either way; a key left behind names nothing.
            }
        }
        persist();
        emit changed();
        return;
    }
}

void RemoteEndpoints::refresh(const QString& typed) {
    if (Endpoint* e = find(normalizedBaseUrl(typed, nullptr))) {
        list(*e);
        emit changed();
    }
}

void RemoteEndpoints::persist() {
    QJsonArray urls;
    for (const Endpoint& e : endpoints_) urls.append(e.url.toString());
    store_.call(
        this,
        [v = QJsonDocument(urls).toJson(QJsonDocument::Compact).toStdString()](arbor::Store& s) {
            s.set_app_setting(kSettingKey, v);
        },
        [] {});
}

void RemoteEndpoints::list(Endpoint& e) {
    QUrl url = e.url;
    url.setPath(url.path() + QStringLiteral("/models"));
    QNetworkRequest r(url);
    r.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Arbor"));
    if (!e.key.isEmpty()) r.setRawHeader("Authorization", "Bearer " + e.key.toUtf8());
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::SameOriginRedirectPolicy);
    r.setTransferTimeout(kListTimeoutMs);
    e.listing = true;
    const quint64 listing = ++e.listings;
    QNetworkReply* reply = network_.get(r);
    connect(reply, &QNetworkReply::finished, this, [this, reply, base = e.url, listing, withKey = !e.key.isEmpty()] {
        reply->deleteLater();
        Endpoint* e = find(base);
        if (!e || e->listings != listing) return;  // removed, or listed again since
        e->listing = false;
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        const QByteArray body = reply->readAll();
        e->models.clear();
        e->error.clear();
        if (status >= 300) {
            e->error = remoteHttpProblem(hostLabel(base), status, body, withKey);
        } else if (reply->error() != QNetworkReply::NoError) {
            e->error = tr("cannot reach %1: %2").arg(hostLabel(base), reply->errorString());
        } else {
            for (const QJsonValue& m : QJsonDocument::fromJson(body).object().value(QStringLiteral("data")).toArray())
                if (const QString id = m.toObject().value(QStringLiteral("id")).toString(); !id.isEmpty()) e->models.append(id);
            if (e->models.isEmpty()) e->error = tr("%1 lists no models at %2").arg(hostLabel(base), reply->url().toString());
        }
        emit changed();
        emit listed(base.toString());
    });
}

Reply* RemoteEndpoints::start(const RemoteModelRef& model, const QJsonArray& messages,
                              const arbor::GenerateOptions& options) {
    const Endpoint* e = find(model.baseUrl);
    return RemoteChatStream::start(network_, {model, e ? e->key : QString(), messages, options}, stallMs_, this);
}

} // namespace arbor::app
