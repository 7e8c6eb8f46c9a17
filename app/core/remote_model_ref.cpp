#include "remote_model_ref.h"

#include <QCoreApplication>

namespace arbor::app {

QString RemoteModelRef::toString() const {
    QUrl url = baseUrl;
    url.setFragment(model);
    return QLatin1StringView(kPrefix) + url.toString(QUrl::FullyEncoded);
}

QString RemoteModelRef::label() const { return isValid() ? model + QStringLiteral(" @ ") + hostLabel(baseUrl) : QString(); }

RemoteModelRef RemoteModelRef::parse(const QString& text) {
    if (!isRemote(text)) return {};
    QUrl url(text.mid(int(qstrlen(kPrefix))), QUrl::StrictMode);
    if (!url.isValid() || !url.hasFragment()) return {};
    RemoteModelRef ref;
    ref.model = url.fragment(QUrl::FullyDecoded);
    url.setFragment({});
    ref.baseUrl = url;
    return ref;
}

QUrl normalizedBaseUrl(const QString& typed, QString* problem) {
    auto refuse = [problem](const QString& why) {
        if (problem) *problem = why;
        return QUrl();
    };
    const QString text = typed.trimmed();
    if (text.isEmpty()) return refuse(QCoreApplication::translate("RemoteEndpoints", "Type the server's base URL, e.g. http://gpu-box:8000/v1."));
    QUrl url(text, QUrl::StrictMode);
    if (!url.isValid() || url.host().isEmpty() || (url.scheme() != QStringLiteral("http") && url.scheme() != QStringLiteral("https")))
        return refuse(QCoreApplication::translate("RemoteEndpoints", "\"%1\" is not an http:// or https:// URL with a host.").arg(text));
    if (url.hasQuery() || url.hasFragment())
        return refuse(QCoreApplication::translate("RemoteEndpoints", "A base URL has no query or fragment (\"?\" or \"#\")."));
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/'))) path.chop(1);
    url.setPath(path.isEmpty() ? QStringLiteral("/v1") : path);
    if (problem) problem->clear();
    return url;
}

QString hostLabel(const QUrl& baseUrl) {
    return baseUrl.port() >= 0 ? QStringLiteral("%1:%2").arg(baseUrl.host()).arg(baseUrl.port()) : baseUrl.host();
}

} // namespace arbor::app
