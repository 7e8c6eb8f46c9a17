#include "model_library.h"

#include "model_fit.h"

#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QUrl>

#include <algorithm>
#include <filesystem>

namespace arbor::app {

namespace {

QString fromStd(const std::string& s) { return QString::fromStdString(s); }

} // namespace

ModelLibrary::ModelLibrary(const QString& defaultFolder, QObject* parent)
    : QAbstractListModel(parent), defaultFolder_(QDir::cleanPath(defaultFolder)) {
    QDir().mkpath(defaultFolder_);
    undoTimer_.setSingleShot(true);
    connect(&undoTimer_, &QTimer::timeout, this, &ModelLibrary::commitPendingDeletion);
    rescan_.setSingleShot(true);
    rescan_.setInterval(200);
    connect(&rescan_, &QTimer::timeout, this, &ModelLibrary::refresh);
    connect(&watcher_, &QFileSystemWatcher::directoryChanged, this, [this] { rescan_.start(); });
    watchFolders();
    refresh();
}

ModelLibrary::~ModelLibrary() { commitPendingDeletion(); }

int ModelLibrary::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(models_.size());
}

int ModelLibrary::contextFor(const ModelFileInfo& info) const {
    const int chosen = contextLengths_.value(fromStd(info.path.string())).toInt();
    return chosen > 0 ? chosen : int(info.contextLength);
}

QVariant ModelLibrary::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const ModelFileInfo& m = models_[size_t(index.row())];
    const auto fit = [&] {
        const double element = kvElementBytes(kvType_.toStdString()).value_or(2.0);
        return estimateFit(m.fileSize, kvCacheBytes(m.layers, m.kvDim, contextFor(m), element), availableMemory_);
    };
    switch (role) {
    case PathRole: return fromStd(m.path.string());
    case FileNameRole: return fromStd(m.path.filename().string());
    case FolderRole: return fromStd(m.path.parent_path().string());
    case NameRole: return fromStd(m.name);
    case ArchitectureRole: return fromStd(m.architecture);
    case ParametersRole: return m.parameterCount ? fromStd(parameterCountText(m.parameterCount)) : QString();
    case QuantTypeRole: return fromStd(m.quantType);
    case FileSizeRole: return qint64(m.fileSize);
    case SizeTextRole: return fromStd(byteSizeText(m.fileSize));
    case ContextLengthRole: return qint64(m.contextLength);
    case SupportedRole: return m.supported;
    case ProblemRole: return fromStd(m.problem);
    case FitVerdictRole: return m.supported ? fromStd(std::string(verdictName(fit().verdict))) : QString();
    case FitTextRole: return m.supported ? fromStd(fitText(fit(), contextFor(m))) : QString();
    default: return {};
    }
}

QHash<int, QByteArray> ModelLibrary::roleNames() const {
    return {{PathRole, "path"},
            {FileNameRole, "fileName"},
            {FolderRole, "folder"},
            {NameRole, "name"},
            {ArchitectureRole, "architecture"},
            {ParametersRole, "parameters"},
            {QuantTypeRole, "quantType"},
            {FileSizeRole, "fileSize"},
            {SizeTextRole, "sizeText"},
            {ContextLengthRole, "contextLength"},
            {SupportedRole, "supported"},
            {ProblemRole, "problem"},
            {FitVerdictRole, "fitVerdict"},
            {FitTextRole, "fitText"}};
}

void ModelLibrary::setFolders(const QStringList& folders) {
    QStringList cleaned;
    for (const QString& f : folders) {
        const QString c = QDir::cleanPath(f);
        if (!c.isEmpty() && c != defaultFolder_ && !cleaned.contains(c)) cleaned << c;
    }
    if (cleaned == folders_) return;
    folders_ = cleaned;
    emit foldersChanged();
    watchFolders();
    refresh();
}

void ModelLibrary::watchFolders() {
    if (!watcher_.directories().isEmpty()) watcher_.removePaths(watcher_.directories());
    QStringList existing;
    for (const QString& f : QStringList{defaultFolder_} + folders_)
        if (QFileInfo(f).isDir()) existing << f;
    if (!existing.isEmpty()) watcher_.addPaths(existing);
}

QString ModelLibrary::pendingDeletion() const { return QFileInfo(pendingPath_).fileName(); }

void ModelLibrary::setKvType(const QString& type) {
    if (type == kvType_) return;
    kvType_ = type;
    emit fitInputsChanged();
    if (!models_.empty()) emit dataChanged(index(0), index(rowCount() - 1), {FitVerdictRole, FitTextRole});
}

void ModelLibrary::setContextLengths(const QVariantMap& lengths) {
    if (lengths == contextLengths_) return;
    contextLengths_ = lengths;
    emit fitInputsChanged();
    if (!models_.empty()) emit dataChanged(index(0), index(rowCount() - 1), {FitVerdictRole, FitTextRole});
}

const ModelFileInfo* ModelLibrary::find(const QString& path) const {
    const std::filesystem::path p = path.toStdString();
    const auto it = std::find_if(models_.begin(), models_.end(), [&](const ModelFileInfo& m) { return m.path == p; });
    return it == models_.end() ? nullptr : &*it;
}

void ModelLibrary::refresh() {
    std::vector<ModelFileInfo> found;
    for (const QString& folder : QStringList{defaultFolder_} + folders_) {
        const QDir dir(folder);
        const QStringList names = dir.entryList({QStringLiteral("*.gguf")}, QDir::Files | QDir::Readable, QDir::Name);
        for (const QString& name : names) {
            const QString path = dir.filePath(name);
            if (path != pendingPath_) found.push_back(readModelFileInfo(path.toStdString()));
        }
    }
    availableMemory_ = availableMemoryBytes().value_or(0);
    const int before = rowCount();
    beginResetModel();
    models_ = std::move(found);
    endResetModel();
    if (rowCount() != before) emit countChanged();
}

QString ModelLibrary::deleteWithUndo(const QString& path) {
    if (!find(path)) return tr("%1 is not in the library").arg(path);
    commitPendingDeletion();
    pendingPath_ = path;
    emit pendingDeletionChanged();
    undoTimer_.start(kUndoDeleteMs);
    refresh();
    return {};
}

void ModelLibrary::undoDelete() {
    if (pendingPath_.isEmpty()) return;
    undoTimer_.stop();
    pendingPath_.clear();
    emit pendingDeletionChanged();
    refresh();
}

void ModelLibrary::commitPendingDeletion() {
    if (pendingPath_.isEmpty()) return;
    undoTimer_.stop();
    const QString path = std::exchange(pendingPath_, QString());
    std::error_code ec;
    std::filesystem::remove(path.toStdString(), ec);
    emit pendingDeletionChanged();
    if (ec) {
        emit deleteFailed(tr("Could not delete %1: %2").arg(path, fromStd(ec.message())));
        refresh();  // it is still there: list it again
    }
}

bool ModelLibrary::revealInFileManager(const QString& path) const {
    const QFileInfo info(path);
    return QDesktopServices::openUrl(QUrl::fromLocalFile(info.isDir() ? path : info.absolutePath()));
}

} // namespace arbor::app
