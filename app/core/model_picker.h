// What the model picker in the window's header does beyond listing the library: switching
// models without losing the one in use, and asking before a conversation continues with
// a model other than the one it last used.
//
// Switching: choose() reads the file's header first (off the GUI thread) and refuses a
// file the engine cannot load without unloading anything; a load that fails after the
// current model was unloaded loads that model again, and `error` says what happened.
//
// Asking: when the current tab's conversation last generated with a model file (that
// still exists) other than the one loaded or loading, `suggestedPath` names it and the
// window asks whether to switch. Each conversation is asked once per model it used:
// keeping the current model, or choosing one in the picker while its tab is current,
// counts as the answer until it uses another model.
//
// Remote models: choosing one (chooseRemote) makes it the current conversation's model,
// without unloading the local one; the header then shows it (currentRemote). Choosing a
// local model for a conversation that used a remote one brings it back to the local one.
#pragma once

#include "model_service.h"
#include "tab_list_model.h"

#include <QHash>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QtQml/qqmlregistration.h>

#include <functional>

namespace arbor::app {

class ModelPicker : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    // A chosen model's header is being read, or a model is loading.
    Q_PROPERTY(bool busy READ busy NOTIFY busyChanged)
    // Why the last model chosen is not in use (and what is used instead); empty when none.
    Q_PROPERTY(QString error READ error NOTIFY errorChanged)
    // The model the current conversation last used, when the window should offer to switch
    // to it; empty otherwise. suggestedName is its file name without .gguf, suggestedFor
    // the conversation's title.
    Q_PROPERTY(QString suggestedPath READ suggestedPath NOTIFY suggestionChanged)
    Q_PROPERTY(QString suggestedName READ suggestedName NOTIFY suggestionChanged)
    Q_PROPERTY(QString suggestedFor READ suggestedFor NOTIFY suggestionChanged)
    // The current conversation's remote model as "model @ host" (RemoteModelRef::label),
    // and its reference; empty when it uses the local model.
    Q_PROPERTY(QString currentRemote READ currentRemote NOTIFY currentRemoteChanged)
    Q_PROPERTY(QString currentRemoteRef READ currentRemoteRef NOTIFY currentRemoteChanged)
public:
    // `use` makes a path the model of the settings and loads it (ArborApp::useModel).
    ModelPicker(ModelService& models, TabListModel& tabs, std::function<void(const QString&)> use,
                QObject* parent = nullptr);

    bool busy() const { return checks_ > 0 || models_.state() == QStringLiteral("loading"); }
    QString error() const { return error_; }
    QString suggestedPath() const { return suggested_; }
    QString suggestedName() const;
    QString suggestedFor() const;
    QString currentRemote() const;
    QString currentRemoteRef() const;

    // Switches to the GGUF file at `pathOrUrl` (a path or a file:// URL), keeping the
    // current model when it cannot be loaded (see above). Choosing the loaded file again
    // reloads it (with the current settings).
    Q_INVOKABLE void choose(const QString& pathOrUrl);
    // Answers the suggestion: switch to the conversation's model, or keep the current one.
    // Makes the remote model `ref` (RemoteModelRef::toString) the current conversation's.
    Q_INVOKABLE void chooseRemote(const QString& ref);
    Q_INVOKABLE void acceptSuggestion();
    Q_INVOKABLE void keepCurrentModel();
    Q_INVOKABLE void dismissError();

signals:
    void busyChanged();
    void errorChanged();
    void suggestionChanged();
    void currentRemoteChanged();

private:
    void setError(const QString& error);
    void setSuggested(const QString& path);
    void watchCurrentTab();
    void reconsider();  // sets or clears the suggestion for the current tab
    void modelStateChanged();
    void useChecked(const QString& path);

    ModelService& models_;
    TabListModel& tabs_;
    std::function<void(const QString&)> use_;
    QPointer<ChatSession> watched_;
    QString error_;
    QString suggested_;
    QHash<qint64, QString> answered_;  // conversation -> the recorded model it was asked about
    int checks_ = 0;                   // header reads in flight
    quint64 choice_ = 0;               // only the newest choice is carried out
    // The switch in progress: the file chosen and the model in use before it (empty when
    // none was ready), loaded again when the chosen one fails.
    QString target_, previous_;
};

} // namespace arbor::app
