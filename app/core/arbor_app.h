// The root of the desktop app, handed to Main.qml as its `app` property: owns the store
// service, the settings, the model service, the sidebar's conversation list, the tabs and
// the API switch, and runs the start-up sequence: open the store, read the settings,
// then in parallel load the model, list the conversations, reopen the tabs and start
// the API server if it is switched on.
#pragma once

#include "api_controller.h"
#include "app_settings.h"
#include "conversation_list_model.h"
#include "default_model_download.h"
#include "model_download_list.h"
#include "model_library.h"
#include "model_picker.h"
#include "model_service.h"
#include "remote_endpoints.h"
#include "tab_list_model.h"
#include "tab_warmer.h"

#include <QObject>
#include <QTimer>
#include <QtQml/qqmlregistration.h>

#include <filesystem>
#include <memory>

namespace arbor::app {

// Start-up guard: a marker in the app settings is set before the tabs are restored and
// removed once the restored tabs' messages have been shown, their warm-ups (TabWarmer)
// have finished, and the window has kept running for kStartupSettleMs (or when the app
// closes normally). A start that finds the
// marker set follows one that never finished (killed while a restored tab froze it): it
// opens no tabs and says so, so one bad conversation cannot lock the user out.
class ArborApp : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by main()")
    Q_PROPERTY(arbor::app::AppSettings* settings READ settings CONSTANT)
    Q_PROPERTY(arbor::app::ModelService* model READ model CONSTANT)
    Q_PROPERTY(arbor::app::ConversationListModel* conversations READ conversations CONSTANT)
    Q_PROPERTY(arbor::app::TabListModel* tabs READ tabs CONSTANT)
    Q_PROPERTY(arbor::app::ApiController* api READ api CONSTANT)
    Q_PROPERTY(arbor::app::DefaultModelDownload* defaultModelDownload READ defaultModelDownload CONSTANT)
    Q_PROPERTY(arbor::app::ModelLibrary* library READ library CONSTANT)
    Q_PROPERTY(arbor::app::ModelDownloadList* downloads READ downloads CONSTANT)
    Q_PROPERTY(arbor::app::ModelPicker* picker READ picker CONSTANT)
    Q_PROPERTY(arbor::app::RemoteEndpoints* remotes READ remotes CONSTANT)
    Q_PROPERTY(bool started READ started NOTIFY startedChanged)  // store open, tabs restored
    // Something the user must be told (a database moved aside, a failed write); cleared
    // by dismissNotice().
    Q_PROPERTY(QString notice READ notice NOTIFY noticeChanged)
    Q_PROPERTY(QString databasePath READ databasePath CONSTANT)
    // The title of the conversation deleted with deleteWithUndo() whose deletion can still
    // be undone; empty when there is none.
    Q_PROPERTY(QString pendingDeletion READ pendingDeletion NOTIFY pendingDeletionChanged)
public:
    // How long a deletion can be undone.
    static constexpr int kUndoDeleteMs = 6000;
    static constexpr const char* kStartupMarkerKey = "app.start_unfinished";
    static constexpr int kStartupSettleMs = 2000;

    explicit ArborApp(std::filesystem::path database, QObject* parent = nullptr);
    ~ArborApp() override;

    AppSettings* settings() const { return settings_.get(); }
    ModelService* model() const { return models_.get(); }
    ConversationListModel* conversations() const { return conversations_.get(); }
    TabListModel* tabs() const { return tabs_.get(); }
    ApiController* api() const { return api_.get(); }
    DefaultModelDownload* defaultModelDownload() const { return download_.get(); }
    ModelLibrary* library() const { return library_.get(); }
    ModelDownloadList* downloads() const { return downloads_.get(); }
    ModelPicker* picker() const { return picker_.get(); }
    RemoteEndpoints* remotes() const { return remotes_.get(); }
    TabWarmer* warmer() const { return warmer_.get(); }
    bool started() const { return started_; }
    QString notice() const { return notice_; }
    QString databasePath() const { return databasePath_; }
    QString pendingDeletion() const { return pendingDeletionTitle_; }

    // Begins the start-up sequence; `modelOverride` (arbor --model) replaces the stored
    // model choice for this run.
    void start(const QString& modelOverride = {});

    // Reloads the model with the current settings (after a change of model, threads, KV
    // budget, disk tier, KV type, device or the model's context length).
    Q_INVOKABLE void reloadModel();
    // Picks a GGUF file (a path or a file:// URL) as the model and loads it, keeping the
    // model in use when it cannot be loaded (ModelPicker::choose).
    Q_INVOKABLE void chooseModel(const QString& pathOrUrl);
    Q_INVOKABLE void renameConversation(qint64 id, const QString& title);
    Q_INVOKABLE void deleteConversation(qint64 id);  // closes its tab first
    // Takes the conversation out of the list and closes its tab at once, and deletes it
    // after kUndoDeleteMs, at the next such deletion, or when the app closes, unless
    // undoDelete() came first.
    Q_INVOKABLE void deleteWithUndo(qint64 id, const QString& title);
    Q_INVOKABLE void undoDelete();
    Q_INVOKABLE void copyText(const QString& text) const;
    Q_INVOKABLE void dismissNotice();

signals:
    void startedChanged();
    void noticeChanged();
    void pendingDeletionChanged();

private:
    void setNotice(const QString& notice);
    void useModel(const QString& path);  // as the setting, and loads it
    // Restores the tabs, or, when the last start never finished, skips them.
    void restoreTabsUnlessLastStartFailed();
    // Warms the restored tabs once every one has shown its messages, and clears the
    // start-up marker when the warm-ups have settled and the event loop has kept running
    // for kStartupSettleMs.
    void confirmStartAfterTabsShown();
    void clearStartupMarker();
    void commitPendingDeletion();
    void setPendingDeletion(qint64 id, const QString& title);

    QString databasePath_;
    // Declaration order matters for destruction, which ~ArborApp spells out.
    std::unique_ptr<StoreService> store_;
    std::unique_ptr<AppSettings> settings_;
    std::unique_ptr<ModelService> models_;
    std::unique_ptr<ConversationListModel> conversations_;
    std::unique_ptr<TabListModel> tabs_;
    std::unique_ptr<TabWarmer> warmer_;
    std::unique_ptr<SecretStore> secrets_;  // the API key; before api_, which uses it
    // After the tabs: their replies from a server finish (cancelled) before it goes.
    std::unique_ptr<RemoteEndpoints> remotes_;
    std::unique_ptr<ApiController> api_;
    std::unique_ptr<DefaultModelDownload> download_;
    std::unique_ptr<ModelLibrary> library_;
    std::unique_ptr<ModelDownloadList> downloads_;  // keeps its token in secrets_
    std::unique_ptr<ModelPicker> picker_;
    bool started_ = false;
    bool startupMarked_ = false;  // the marker is set and not yet cleared
    QString notice_;
    QTimer startupSettle_;
    qint64 pendingDeletionId_ = 0;
    QString pendingDeletionTitle_;
    QTimer undoDeleteTimer_;
};

} // namespace arbor::app
