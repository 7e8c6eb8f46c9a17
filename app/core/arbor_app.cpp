#include "arbor_app.h"

#include "arbor/paths.h"

#include <QClipboard>
#include <QGuiApplication>

#include <memory>
#include <utility>

namespace arbor::app {

ArborApp::ArborApp(std::filesystem::path database, QObject* parent)
    : QObject(parent),
      databasePath_(QString::fromStdString(database.string())),
      store_(std::make_unique<StoreService>(database)),
      settings_(std::make_unique<AppSettings>(*store_)),
      models_(std::make_unique<ModelService>()),
      conversations_(std::make_unique<ConversationListModel>(*store_)),
      tabs_(std::make_unique<TabListModel>(*store_, *models_)),
      warmer_(std::make_unique<TabWarmer>(*store_, *models_)),
      secrets_(std::make_unique<SecretStore>(database.parent_path() / "secrets")),
      remotes_(std::make_unique<RemoteEndpoints>(*store_, secrets_.get())),
      api_(std::make_unique<ApiController>(*store_, *secrets_)),
      download_(std::make_unique<DefaultModelDownload>(
          DefaultModelSource::pinned(),
          QString::fromStdString((arbor::models_dir() / arbor::kDefaultModelFile).string()))),
      library_(std::make_unique<ModelLibrary>(QString::fromStdString(arbor::models_dir().string()))),
      downloads_(std::make_unique<ModelDownloadList>(QString::fromStdString(arbor::models_dir().string()), secrets_.get(),
                                                     HfHubClient::defaultBaseUrl())),
      picker_(std::make_unique<ModelPicker>(*models_, *tabs_, [this](const QString& path) { useModel(path); })) {
    models_->setRemotes(remotes_.get());
    StoreWorker* w = store_->worker();
    connect(w, &StoreWorker::failed, this, &ArborApp::setNotice, Qt::QueuedConnection);
    connect(w, &StoreWorker::opened, this, [this](const QString& problem) {
        if (!problem.isEmpty()) setNotice(problem);
        settings_->load();
        conversations_->reload();
        remotes_->load();
        restoreTabsUnlessLastStartFailed();
        api_->load();
    }, Qt::QueuedConnection);
    connect(settings_.get(), &AppSettings::loaded, this, &ArborApp::reloadModel);
    connect(tabs_.get(), &TabListModel::restored, this, [this] {
        started_ = true;
        emit startedChanged();
        confirmStartAfterTabsShown();
    });
    startupSettle_.setSingleShot(true);
    startupSettle_.setInterval(kStartupSettleMs);
    connect(&startupSettle_, &QTimer::timeout, this, &ArborApp::clearStartupMarker);
    undoDeleteTimer_.setSingleShot(true);
    connect(&undoDeleteTimer_, &QTimer::timeout, this, &ArborApp::commitPendingDeletion);
    connect(tabs_.get(), &TabListModel::conversationActivity, conversations_.get(), &ConversationListModel::reload);
    connect(models_.get(), &ModelService::modelChanged, this, [this] { api_->setModel(models_->current()); });
    // The library lists the folders of the settings and estimates fit with their KV type
    // and context lengths.
    connect(settings_.get(), &AppSettings::changed, this, [this] {
        library_->setFolders(settings_->modelFolders());
        library_->setKvType(settings_->kvType());
        library_->setContextLengths(settings_->contextLengths());
    });
    connect(downloads_.get(), &ModelDownloadList::downloaded, library_.get(), &ModelLibrary::refresh);
    // A finished download loads the default model, unless the user chose another meanwhile.
    connect(download_.get(), &DefaultModelDownload::succeeded, this, [this] {
        if (models_->missingDefaultModel()) reloadModel();
    });
}

ArborApp::~ArborApp() {
    // Running model downloads are stopped (their partial files resume next run); the API server stops next (it holds the
    // engine), then the tabs cancel their replies and post their last writes, then the
    // store finishes every posted job; the model goes last, released off this thread.
    // Closing normally means the start did finish.
    clearStartupMarker();
    commitPendingDeletion();
    picker_.reset();
    download_.reset();
    downloads_.reset();
    library_.reset();
    api_.reset();
    warmer_.reset();
    tabs_.reset();
    remotes_.reset();
    conversations_.reset();
    store_.reset();
    settings_.reset();
    models_.reset();
}

void ArborApp::start(const QString& modelOverride) {
    if (!modelOverride.isEmpty()) settings_->overrideModelPath(modelOverride);
    store_->open();
}

void ArborApp::restoreTabsUnlessLastStartFailed() {
    startupMarked_ = true;
    store_->call(
        this,
        [](arbor::Store& s) {
            const bool unfinished = s.app_setting(kStartupMarkerKey).has_value();
            s.set_app_setting(kStartupMarkerKey, "1");
            return unfinished;
        },
        [this](bool lastStartUnfinished) {
            if (!lastStartUnfinished) {
                tabs_->restore();
                return;
            }
            setNotice(tr("Arbor did not finish starting last time, so the tabs that were open then were not "
                         "reopened. Their conversations are in the list."));
            tabs_->skipRestore();
        },
        [this](const QString& problem) {
            setNotice(problem);
            tabs_->restore();
        });
}

void ArborApp::confirmStartAfterTabsShown() {
    // A warm-up that crashes the app must leave the marker set: the settle time starts
    // only once the warm-ups are done.
    connect(warmer_.get(), &TabWarmer::settled, this, [this] { startupSettle_.start(); },
            Qt::SingleShotConnection);
    auto warmAll = [this] {
        QList<ChatSession*> sessions;
        if (ChatSession* current = tabs_->current()) sessions.push_back(current);
        for (int i = 0; i < tabs_->rowCount(); ++i)
            if (tabs_->sessionAt(i) != tabs_->current()) sessions.push_back(tabs_->sessionAt(i));
        warmer_->warm(sessions);
    };
    // Each restored tab counts once, whether its messages loaded or failed to.
    auto pending = std::make_shared<int>(tabs_->rowCount());
    auto shown = [pending, warmAll] {
        if (--*pending == 0) warmAll();
    };
    for (int i = 0; i < tabs_->rowCount(); ++i) {
        MessageListModel* messages = tabs_->sessionAt(i)->messages();
        auto once = std::make_shared<bool>(false);
        auto done = [shown, once] {
            if (!std::exchange(*once, true)) shown();
        };
        connect(messages, &MessageListModel::loaded, this, done, Qt::SingleShotConnection);
        connect(messages, &MessageListModel::error, this, done, Qt::SingleShotConnection);
    }
    if (*pending == 0) warmAll();
}

void ArborApp::clearStartupMarker() {
    if (!std::exchange(startupMarked_, false)) return;
    startupSettle_.stop();
    store_->post([](StoreWorker& w) {
        if (!w.store()) return;
        try {
            w.store()->remove_app_setting(kStartupMarkerKey);
        } catch (const std::exception& e) {
            emit w.failed(QString::fromUtf8(e.what()));
        }
    });
}

void ArborApp::reloadModel() {
    models_->load(settings_->modelPath(), settings_->threads(), settings_->kvMemoryMiB(), settings_->kvDiskMiB(),
                  settings_->kvType(), settings_->contextLength(settings_->modelPath()), settings_->device());
}

void ArborApp::chooseModel(const QString& pathOrUrl) { picker_->choose(pathOrUrl); }

void ArborApp::useModel(const QString& path) {
    settings_->setModelPath(path);
    reloadModel();
}

void ArborApp::renameConversation(qint64 id, const QString& title) {
    const QString t = title.simplified();
    if (t.isEmpty()) return;
    conversations_->rename(id, t);
    tabs_->renamed(id, t);
}

void ArborApp::deleteConversation(qint64 id) {
    tabs_->closeConversation(id);
    conversations_->remove(id);
}

void ArborApp::deleteWithUndo(qint64 id, const QString& title) {
    commitPendingDeletion();
    tabs_->closeConversation(id);
    conversations_->hide(id);
    setPendingDeletion(id, title);
    undoDeleteTimer_.start(kUndoDeleteMs);
}

void ArborApp::undoDelete() {
    if (pendingDeletionId_ == 0) return;
    undoDeleteTimer_.stop();
    conversations_->unhide(pendingDeletionId_);
    setPendingDeletion(0, {});
}

void ArborApp::commitPendingDeletion() {
    if (pendingDeletionId_ == 0) return;
    undoDeleteTimer_.stop();
    conversations_->remove(pendingDeletionId_);
    // Reloads after the deletion (the store runs jobs in order): the list shows what the
    // store holds.
    conversations_->unhide(pendingDeletionId_);
    setPendingDeletion(0, {});
}

void ArborApp::setPendingDeletion(qint64 id, const QString& title) {
    pendingDeletionId_ = id;
    if (title == pendingDeletionTitle_) return;
    pendingDeletionTitle_ = title;
    emit pendingDeletionChanged();
}

void ArborApp::copyText(const QString& text) const {
    if (QClipboard* clipboard = QGuiApplication::clipboard()) clipboard->setText(text);
}

void ArborApp::setNotice(const QString& notice) {
    if (notice == notice_) return;
    notice_ = notice;
    emit noticeChanged();
}

void ArborApp::dismissNotice() { setNotice({}); }

} // namespace arbor::app
