#include "hf_hub_client.h"

#include "model_fit.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkReply>
#include <QRegularExpression>

namespace arbor::app {

QUrl HfHubClient::defaultBaseUrl() {
    const QString endpoint = qEnvironmentVariable("HF_ENDPOINT");
    return QUrl(endpoint.isEmpty() ? QStringLiteral("https://huggingface.co") : endpoint);
}

HfHubClient::HfHubClient(QNetworkAccessManager& network, QUrl baseUrl, std::function<QString()> token, QObject* parent)
    : QObject(parent), network_(network), base_(std::move(baseUrl)), token_(std::move(token)) {}

QVariantList HfHubClient::files() const {
    QVariantList out;
    for (const HubFile& f : files_)
        out.append(QVariantMap{{"path", f.path},
                               {"size", f.size},
                               {"sizeText", QString::fromStdString(byteSizeText(uint64_t(f.size)))},
                               {"sha256", f.sha256}});
    return out;
}

QString HfHubClient::repositoryProblem(const QString& repository) {
    // The Hub's names: letters, digits, '-', '_', '.', not starting with '.' or '-'.
    static const QRegularExpression valid(QStringLiteral("^[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_][A-Za-z0-9_.-]*$"));
    if (repository.trimmed().isEmpty()) return tr("Type a repository as owner/name.");
    if (!valid.match(repository.trimmed()).hasMatch() || repository.contains(QStringLiteral("..")))
        return tr("\"%1\" is not a repository name of the form owner/name.").arg(repository.trimmed());
    return {};
}

QUrl HfHubClient::fileUrl(const QString& repository, const QString& path) const {
    QUrl url = base_;
    url.setPath(base_.path() + QStringLiteral("/%1/resolve/main/%2").arg(repository, path));
    return url;
}

QNetworkRequest HfHubClient::request(const QUrl& url) const {
    QNetworkRequest r(url);
    const QString token = token_ ? token_() : QString();
    if (!token.isEmpty()) r.setRawHeader("Authorization", "Bearer " + token.toUtf8());
    r.setHeader(QNetworkRequest::UserAgentHeader, QStringLiteral("Arbor"));
    r.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::NoLessSafeRedirectPolicy);
    return r;
}

QString HfHubClient::httpProblem(int status, const QString& what, bool hadToken) {
    switch (status) {
    case 401:
        return hadToken ? tr("The Hub refused the Hugging Face token for %1 (401): check the token in settings.").arg(what)
                        : tr("%1 needs a Hugging Face token (401): it is gated or private; add a token in settings.").arg(what);
    case 403:
        return tr("Access to %1 is refused (403): the repository is gated; accept its terms on huggingface.co with "
                  "the account whose token is in settings.").arg(what);
    case 404: return tr("%1 was not found on the Hub (404).").arg(what);
    case 429: return tr("The Hub is limiting requests (429); try again in a while.");
    default: return tr("The Hub answered %1 for %2.").arg(status).arg(what);
    }
}

QList<HubFile> HfHubClient::parseTree(const QByteArray& json, QString* problem) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (!doc.isArray()) {
        if (problem) *problem = tr("The Hub's file list is not readable: %1").arg(error.errorString());
        return {};
    }
    QList<HubFile> out;
    for (const QJsonValue& v : doc.array()) {
        const QJsonObject o = v.toObject();
        const QString path = o.value("path").toString();
        if (o.value("type").toString() != "file" || !path.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive)) continue;
        const QJsonObject lfs = o.value("lfs").toObject();
        HubFile f;
        f.path = path;
        f.size = qint64(lfs.isEmpty() ? o.value("size").toDouble() : lfs.value("size").toDouble());
        f.sha256 = lfs.value("oid").toString().toLower();
        out.append(f);
    }
    std::sort(out.begin(), out.end(), [](const HubFile& a, const HubFile& b) { return a.path < b.path; });
    return out;
}

void HfHubClient::list(const QString& repository) {
    if (reply_) reply_->abort();
    repository_ = repository.trimmed();
    files_.clear();
    error_ = repositoryProblem(repository_);
    if (!error_.isEmpty()) {
        emit changed();
        emit listed();
        return;
    }
    QUrl url = base_;
    url.setPath(base_.path() + QStringLiteral("/api/models/%1/tree/main").arg(repository_));
    reply_ = network_.get(request(url));
    connect(reply_, &QNetworkReply::finished, this, &HfHubClient::finished);
    emit changed();
}

void HfHubClient::finished() {
    QNetworkReply* reply = qobject_cast<QNetworkReply*>(sender());
    if (!reply) return;
    reply->deleteLater();
    if (reply != reply_) return;  // superseded by a later listing
    reply_ = nullptr;
    const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    if (status >= 400) {
        error_ = httpProblem(status, repository_, !reply->request().rawHeader("Authorization").isEmpty());
    } else if (reply->error() != QNetworkReply::NoError) {
        error_ = tr("Cannot reach the Hub: %1").arg(reply->errorString());
    } else {
        files_ = parseTree(reply->readAll(), &error_);
        if (error_.isEmpty() && files_.isEmpty()) error_ = tr("%1 has no .gguf files.").arg(repository_);
    }
    emit changed();
    emit listed();
}

} // namespace arbor::app
