// The model library: the GGUF files in the models directory and in the folders the user
// added, each described from its header (model_file_info.h) with a fit estimate for its
// context (model_fit.h). Rescans when a folder's contents change (a finished download
// appears by itself). Deleting can be undone for kUndoDeleteMs: the file stays on disk
// and only leaves the list until then, so a crash in between deletes nothing.
#pragma once

#include "model_file_info.h"

#include <QAbstractListModel>
#include <QFileSystemWatcher>
#include <QStringList>
#include <QTimer>
#include <QVariantMap>
#include <QtQml/qqmlregistration.h>

#include <vector>

namespace arbor::app {

class ModelLibrary : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(QString defaultFolder READ defaultFolder CONSTANT)
    Q_PROPERTY(QStringList folders READ folders WRITE setFolders NOTIFY foldersChanged)  // user-added
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
    // The file name of the model whose deletion can still be undone; empty when none.
    Q_PROPERTY(QString pendingDeletion READ pendingDeletion NOTIFY pendingDeletionChanged)
    // What the fit estimate assumes: the engine's KV type and the context chosen per
    // model ({path: tokens}; a model without one: its trained context).
    Q_PROPERTY(QString kvType READ kvType WRITE setKvType NOTIFY fitInputsChanged)
    Q_PROPERTY(QVariantMap contextLengths READ contextLengths WRITE setContextLengths NOTIFY fitInputsChanged)
public:
    static constexpr int kUndoDeleteMs = 6000;

    enum Roles {
        PathRole = Qt::UserRole + 1, FileNameRole, FolderRole, NameRole, ArchitectureRole,
        ParametersRole, QuantTypeRole, FileSizeRole, SizeTextRole, ContextLengthRole,
        SupportedRole, ProblemRole, FitVerdictRole, FitTextRole,
    };

    // `defaultFolder`: the models directory (always listed, created when missing).
    explicit ModelLibrary(const QString& defaultFolder, QObject* parent = nullptr);
    ~ModelLibrary() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    QString defaultFolder() const { return defaultFolder_; }
    QStringList folders() const { return folders_; }
    void setFolders(const QStringList& folders);
    QString pendingDeletion() const;
    QString kvType() const { return kvType_; }
    void setKvType(const QString& type);
    QVariantMap contextLengths() const { return contextLengths_; }
    void setContextLengths(const QVariantMap& lengths);

    const ModelFileInfo* find(const QString& path) const;

    // Reads every folder anew (and the available memory for the fit estimates).
    Q_INVOKABLE void refresh();
    // Takes the model out of the list now and deletes its file after kUndoDeleteMs, at
    // the next deletion, or when the library goes away, unless undoDelete() came first.
    // Returns why it cannot ("" when it can): a path that is not in the library.
    Q_INVOKABLE QString deleteWithUndo(const QString& path);
    Q_INVOKABLE void undoDelete();
    // Opens the folder holding the model in the desktop's file manager; false when none
    // could be started.
    Q_INVOKABLE bool revealInFileManager(const QString& path) const;

signals:
    void foldersChanged();
    void countChanged();
    void pendingDeletionChanged();
    void fitInputsChanged();
    // A deletion could not be carried out; `reason` names the file and the cause.
    void deleteFailed(const QString& reason);

private:
    void commitPendingDeletion();
    void watchFolders();
    int contextFor(const ModelFileInfo& info) const;

    QString defaultFolder_;
    QStringList folders_;
    std::vector<ModelFileInfo> models_;
    uint64_t availableMemory_ = 0;
    QString kvType_ = QStringLiteral("f16");
    QVariantMap contextLengths_;
    QString pendingPath_;
    QTimer undoTimer_;
    QFileSystemWatcher watcher_;
    QTimer rescan_;  // coalesces a burst of folder changes into one refresh
};

} // namespace arbor::app
