#include "model_picker.h"

#include "background_job.h"
#include "model_file_info.h"

#include <QFileInfo>
#include <QUrl>

#include <utility>

namespace arbor::app {

ModelPicker::ModelPicker(ModelService& models, TabListModel& tabs, std::function<void(const QString&)> use,
                         QObject* parent)
    : QObject(parent), models_(models), tabs_(tabs), use_(std::move(use)) {
    connect(&models_, &ModelService::stateChanged, this, &ModelPicker::modelStateChanged);
    connect(&tabs_, &TabListModel::currentChanged, this, &ModelPicker::watchCurrentTab);
}

QString ModelPicker::suggestedName() const { return QFileInfo(suggested_).completeBaseName(); }

QString ModelPicker::suggestedFor() const {
    const ChatSession* session = tabs_.current();
    if (!session || suggested_.isEmpty()) return {};
    return session->title().isEmpty() ? tr("New conversation") : session->title();
}

QString ModelPicker::currentRemoteRef() const {
    const ChatSession* session = tabs_.current();
    return session && session->remote() ? session->modelPath() : QString();
}

QString ModelPicker::currentRemote() const { return RemoteModelRef::parse(currentRemoteRef()).label(); }

void ModelPicker::chooseRemote(const QString& ref) {
    ChatSession* session = tabs_.current();
    if (!session) {
        setError(tr("Open a conversation to use a remote model in it."));
        return;
    }
    if (!RemoteModelRef::parse(ref).isValid()) return;
    setError({});
    session->useModel(ref);
}

void ModelPicker::choose(const QString& pathOrUrl) {
    const QUrl url(pathOrUrl);
    const QString path = url.isLocalFile() ? url.toLocalFile() : pathOrUrl;
    if (path.isEmpty()) return;
    // Choosing while a conversation is shown answers for it.
    if (ChatSession* session = tabs_.current()) {
        answered_.insert(session->conversationId(), session->modelPath());
        if (session->remote()) {
            session->useModel(path);  // back to the local model
            if (models_.ready() && models_.path() == path) return;  // loaded already
        }
    }
    setError({});
    const quint64 choice = ++choice_;
    ++checks_;
    emit busyChanged();
    auto finish = [this, choice] {
        --checks_;
        emit busyChanged();
        return choice == choice_;
    };
    runInBackground(
        this, [path] { return readModelFileInfo(path.toStdString()); },
        [this, finish, path](ModelFileInfo info) {
            if (!finish()) return;
            if (!info.supported) {
                setError(tr("%1 cannot be used: %2").arg(QFileInfo(path).fileName(), QString::fromStdString(info.problem)));
                return;
            }
            useChecked(path);
        },
        [this, finish, path](const QString& message) {
            if (finish()) setError(tr("%1 cannot be used: %2").arg(QFileInfo(path).fileName(), message));
        });
}

void ModelPicker::useChecked(const QString& path) {
    previous_ = models_.ready() ? models_.path() : QString();
    target_ = path;
    use_(path);
}

void ModelPicker::modelStateChanged() {
    emit busyChanged();
    const QString state = models_.state();
    if (!target_.isEmpty() && models_.path() == target_ && state == QStringLiteral("ready")) {
        target_.clear();
        previous_.clear();
    } else if (!target_.isEmpty() && models_.path() == target_ && state == QStringLiteral("failed")) {
        const QString failed = std::exchange(target_, QString());
        const QString previous = std::exchange(previous_, QString());
        if (!previous.isEmpty() && previous != failed) {
            setError(tr("Could not load %1: %2. %3 is loaded again.")
                         .arg(QFileInfo(failed).fileName(), models_.error(), QFileInfo(previous).fileName()));
            use_(previous);
        } else {
            setError(tr("Could not load %1: %2").arg(QFileInfo(failed).fileName(), models_.error()));
        }
    }
    reconsider();
}

void ModelPicker::acceptSuggestion() {
    if (!suggested_.isEmpty()) choose(suggested_);
}

void ModelPicker::keepCurrentModel() {
    if (const ChatSession* session = tabs_.current()) answered_.insert(session->conversationId(), session->modelPath());
    reconsider();
}

void ModelPicker::dismissError() { setError({}); }

void ModelPicker::setError(const QString& error) {
    if (error == error_) return;
    error_ = error;
    emit errorChanged();
}

void ModelPicker::setSuggested(const QString& path) {
    if (path == suggested_) return;
    suggested_ = path;
    emit suggestionChanged();
}

void ModelPicker::watchCurrentTab() {
    if (watched_) watched_->disconnect(this);
    watched_ = tabs_.current();
    if (watched_) {
        // The recorded model is known once the conversation has been read.
        connect(watched_, &ChatSession::modelPathChanged, this, &ModelPicker::reconsider);
        connect(watched_, &ChatSession::titleChanged, this, &ModelPicker::suggestionChanged);
    }
    reconsider();
}

void ModelPicker::reconsider() {
    const ChatSession* session = tabs_.current();
    const QString recorded = session ? session->modelPath() : QString();
    // Before the first load starts (at start-up) there is nothing to compare with; a
    // model already loading or loaded, or one asked about, is not offered again.
    const bool offer = !recorded.isEmpty() && models_.state() != QStringLiteral("none") &&
                       recorded != models_.path() && recorded != target_ &&
                       answered_.value(session->conversationId()) != recorded && QFileInfo::exists(recorded);
    setSuggested(offer ? recorded : QString());
    emit currentRemoteChanged();
}

} // namespace arbor::app
