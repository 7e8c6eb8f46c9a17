#include "model_download_list.h"

#include "model_fit.h"
#include "secret_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

namespace arbor::app {

ModelDownloadList::ModelDownloadList(QString modelsDir, SecretStore* secrets, QUrl baseUrl, QObject* parent)
    : QAbstractListModel(parent), modelsDir_(std::move(modelsDir)), secrets_(secrets),
      hub_(std::make_unique<HfHubClient>(network_, std::move(baseUrl), [this] { return token_; })) {
    QString problem;
    catalogue_ = readCatalogue(QStringLiteral(":/arbor/models/catalogue.json"), &problem);
    if (!problem.isEmpty()) qWarning("%s", qPrintable(problem));
    if (secrets_) {
        try {
            token_ = QString::fromStdString(secrets_->read(kTokenSecret).value_or(std::string()));
        } catch (const std::exception& e) {
            tokenError_ = tr("The Hugging Face token cannot be read: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    restore();
}

ModelDownloadList::~ModelDownloadList() {
    // The downloads stop their transfers while the Hub client and the network they use
    // still exist (members go before the children QObject would delete).
    qDeleteAll(downloads_);
}

int ModelDownloadList::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(downloads_.size());
}

ModelDownload* ModelDownloadList::at(int row) const {
    return row >= 0 && row < rowCount() ? downloads_[size_t(row)] : nullptr;
}

QVariant ModelDownloadList::data(const QModelIndex& index, int role) const {
    ModelDownload* d = at(index.row());
    if (!index.isValid() || !d) return {};
    switch (role) {
    case DownloadRole: return QVariant::fromValue(d);
    case FileNameRole: return d->fileName();
    case StateRole: return QVariant::fromValue(d->state());
    default: return {};
    }
}

QHash<int, QByteArray> ModelDownloadList::roleNames() const {
    return {{DownloadRole, "download"}, {FileNameRole, "fileName"}, {StateRole, "state"}};
}

QVariantList ModelDownloadList::readCatalogue(const QString& path, QString* problem) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        if (problem) *problem = tr("The model catalogue %1 cannot be read: %2").arg(path, f.errorString());
        return {};
    }
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
    if (!doc.isArray()) {
        if (problem) *problem = tr("The model catalogue %1 is not a JSON array: %2").arg(path, error.errorString());
        return {};
    }
    return doc.array().toVariantList();
}

QString ModelDownloadList::download(const QString& repository, const QString& file, qint64 size, const QString& sha256) {
    const QString problem = startDownload(repository, file, size, sha256);
    setLastError(problem);
    return problem;
}

void ModelDownloadList::setLastError(const QString& error) {
    if (error == lastError_) return;
    lastError_ = error;
    emit lastErrorChanged();
}

void ModelDownloadList::downloadFromHub(const QString& repository, const QString& file) {
    setLastError({});
    auto connection = std::make_shared<QMetaObject::Connection>();
    *connection = connect(hub_.get(), &HfHubClient::listed, this, [this, repository, file, connection] {
        disconnect(*connection);
        if (hub_->repository() != repository.trimmed()) return;  // another listing came first
        if (!hub_->error().isEmpty()) return setLastError(hub_->error());
        for (const HubFile& f : hub_->ggufFiles())
            if (f.path == file) return void(download(repository, f.path, f.size, f.sha256));
        setLastError(tr("%1 has no file %2 any more.").arg(repository, file));
    });
    hub_->list(repository);
}

QString ModelDownloadList::startDownload(const QString& repository, const QString& file, qint64 size, const QString& sha256) {
    QString problem = HfHubClient::repositoryProblem(repository);
    if (!problem.isEmpty()) return problem;
    const QString name = QFileInfo(file).fileName();
    if (!name.endsWith(QStringLiteral(".gguf"), Qt::CaseInsensitive) || file.contains(QStringLiteral("..")))
        return tr("%1 is not a .gguf file.").arg(file);
    const QString destination = QDir(modelsDir_).filePath(name);
    if (QFileInfo::exists(destination)) return tr("%1 is already in the library.").arg(name);
    for (ModelDownload* d : downloads_)
        if (d->spec().destination == destination && d->state() != ModelDownload::State::Cancelled &&
            d->state() != ModelDownload::State::Finished)
            return tr("%1 is already being downloaded.").arg(name);
    QDir().mkpath(modelsDir_);
    add(DownloadSpec{repository, file, size, sha256.toLower(), destination, {}});
    downloads_.back()->start();
    return {};
}

void ModelDownloadList::add(DownloadSpec spec) {
    beginInsertRows({}, rowCount(), rowCount());
    auto* d = new ModelDownload(std::move(spec), *hub_, this);
    downloads_.push_back(d);
    endInsertRows();
    emit countChanged();
    connect(d, &ModelDownload::changed, this, [this, d] {
        const auto it = std::find(downloads_.begin(), downloads_.end(), d);
        if (it == downloads_.end()) return;
        const QModelIndex i = index(int(it - downloads_.begin()));
        emit dataChanged(i, i, {StateRole});
    });
    connect(d, &ModelDownload::finished, this, [this, d] { emit downloaded(d->spec().destination); });
}

void ModelDownloadList::dismiss(int row) {
    ModelDownload* d = at(row);
    if (!d || d->active()) return;
    beginRemoveRows({}, row, row);
    downloads_.erase(downloads_.begin() + row);
    endRemoveRows();
    d->deleteLater();
    emit countChanged();
}

void ModelDownloadList::restore() {
    const QDir dir(modelsDir_);
    for (const QString& name : dir.entryList({QStringLiteral("*.gguf.part.json")}, QDir::Files, QDir::Name)) {
        QFile f(dir.filePath(name));
        if (!f.open(QIODevice::ReadOnly)) continue;
        QString problem;
        auto spec = DownloadSpec::fromJson(f.readAll(), &problem);
        // Only a sidecar that names its own neighbour: a moved or edited one is left alone.
        if (!spec || spec->sidecarPath() != dir.filePath(name)) {
            qWarning("ignoring %s: %s", qPrintable(dir.filePath(name)),
                     qPrintable(problem.isEmpty() ? tr("it describes another file") : problem));
            continue;
        }
        add(*spec);
    }
}

void ModelDownloadList::setToken(const QString& token) {
    tokenError_.clear();
    if (!secrets_) {
        tokenError_ = tr("No secret store is available to keep the token.");
    } else {
        try {
            secrets_->write(kTokenSecret, token.trimmed().toStdString());
            token_ = token.trimmed();
        } catch (const std::exception& e) {
            tokenError_ = tr("The Hugging Face token cannot be stored: %1").arg(QString::fromUtf8(e.what()));
        }
    }
    emit tokenChanged();
}

QVariantMap ModelDownloadList::fitForSize(qint64 size) const {
    const FitEstimate fit = estimateFit(uint64_t(std::max<qint64>(size, 0)), 0, availableMemoryBytes().value_or(0));
    QString text = QString::fromStdString(std::string(verdictName(fit.verdict)));
    text[0] = text[0].toUpper();
    text += fit.verdict == FitVerdict::Unknown
                ? tr(": the weights need %1; the available memory is unknown.").arg(QString::fromStdString(byteSizeText(fit.weightBytes)))
                : tr(": the weights need %1 of %2 available, before the KV cache.")
                      .arg(QString::fromStdString(byteSizeText(fit.weightBytes)),
                           QString::fromStdString(byteSizeText(fit.availableBytes)));
    return {{"verdict", QString::fromStdString(std::string(verdictName(fit.verdict)))}, {"text", text}};
}

} // namespace arbor::app
