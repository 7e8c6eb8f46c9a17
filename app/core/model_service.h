// Loads the chosen GGUF model and its engine in the background and owns the bridge that
// brings the engine's events to the GUI thread. Loading, unloading and the destruction
// of an engine (which joins its loop thread) run on background threads; the GUI thread
// only swaps pointers and emits signals.
#pragma once

#include "engine_bridge.h"
#include "loaded_model.h"

#include <QObject>
#include <QString>
#include <QtQml/qqmlregistration.h>

#include <functional>
#include <memory>

class QThread;

namespace arbor::app {

class RemoteEndpoints;

class ModelService : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    // "none", "loading", "ready" or "failed"
    Q_PROPERTY(QString state READ state NOTIFY stateChanged)
    Q_PROPERTY(bool ready READ ready NOTIFY stateChanged)
    Q_PROPERTY(double progress READ progress NOTIFY progressChanged)  // 0..1 while loading
    Q_PROPERTY(QString path READ path NOTIFY stateChanged)
    Q_PROPERTY(QString name READ name NOTIFY stateChanged)
    Q_PROPERTY(QString details READ details NOTIFY stateChanged)  // architecture, size, context
    // What the model calls itself (general.name, else the file name), its architecture
    // ("llama") and its quantization ("Q4_K_M"); empty until a model is ready.
    Q_PROPERTY(QString displayName READ displayName NOTIFY stateChanged)
    Q_PROPERTY(QString architecture READ architecture NOTIFY stateChanged)
    Q_PROPERTY(QString quantType READ quantType NOTIFY stateChanged)
    // Problems of the model in use the user should know of (a chat template that could not
    // be used, an unknown pre-tokenizer), one sentence a line; set once per load, empty
    // when there are none or the user dismissed them.
    Q_PROPERTY(QString warning READ warning NOTIFY warningChanged)
    Q_PROPERTY(QString error READ error NOTIFY stateChanged)
    // What runs the model (Engine::device(), e.g. "CPU (AVX2, 8 threads)"), and the longest
    // sequence it takes in tokens; empty and 0 until a model is ready.
    Q_PROPERTY(QString device READ device NOTIFY stateChanged)
    Q_PROPERTY(int contextSize READ contextSize NOTIFY stateChanged)
    // The context the model was trained with (its GGUF's context_length): the most
    // contextSize can be; 0 until a model is ready.
    Q_PROPERTY(int trainedContext READ trainedContext NOTIFY stateChanged)
    // The failed load was of the default model, and its file does not exist.
    Q_PROPERTY(bool missingDefaultModel READ missingDefaultModel NOTIFY stateChanged)
public:
    explicit ModelService(QObject* parent = nullptr);
    ~ModelService() override;  // waits for background loads and unloads

    QString state() const { return state_; }
    bool ready() const { return bool(current_); }
    double progress() const { return progress_; }
    QString path() const { return path_; }
    QString name() const;
    QString details() const { return details_; }
    QString displayName() const { return current_ ? current_->displayName : QString(); }
    QString architecture() const { return current_ ? current_->architecture : QString(); }
    QString quantType() const { return current_ ? current_->quantType : QString(); }
    QString warning() const { return warning_; }
    Q_INVOKABLE void dismissWarning();
    QString error() const { return error_; }
    QString device() const;
    int contextSize() const;
    int trainedContext() const;
    bool missingDefaultModel() const { return missingDefaultModel_; }

    // Unloads the current model (aboutToUnload first), then loads `path` with an engine
    // of `threads` threads (0: one per core), a KV budget of kvMiB, a KV disk tier of
    // kvDiskMiB (0: off; under arbor::kv_disk_dir()), KV elements of kvType (f16, q8_0
    // or f32), a context of contextTokens (0: the model's trained context), on `device`
    // (auto, cpu or cuda:N; a GPU that cannot be had runs it on the CPU, with the reason
    // in Engine::device_fallback()). A newer call supersedes one still loading.
    Q_INVOKABLE void load(const QString& path, int threads, int kvMiB, int kvDiskMiB = 0,
                          const QString& kvType = QStringLiteral("f16"), int contextTokens = 0,
                          const QString& device = QStringLiteral("cpu"));

    std::shared_ptr<LoadedModel> current() const { return current_; }

    // Submits to the current engine: the request's Reply (owned by the bridge; cancel it
    // there), whose signals only its requester hears, or null when no model is ready.
    Reply* start(arbor::Request request);

    // The remote servers conversations may use instead of the local model (none: only the
    // local one); they outlive this service's sessions.
    void setRemotes(RemoteEndpoints* remotes) { remotes_ = remotes; }
    RemoteEndpoints* remotes() const { return remotes_; }

signals:
    void stateChanged();
    void progressChanged();
    void warningChanged();
    // Requests still running are about to be cancelled without further events.
    void aboutToUnload();
    void modelChanged();  // current() changed

private:
    void runInBackground(std::function<void()> job);
    void setState(const QString& state);
    void setWarning(const QString& warning);
    void loaded(quint64 generation, std::shared_ptr<LoadedModel> model);
    void failed(quint64 generation, const QString& message, bool missingDefaultModel);

    QString state_ = QStringLiteral("none");
    double progress_ = 0.0;
    QString path_, details_, error_, warning_;
    std::shared_ptr<LoadedModel> current_;
    std::unique_ptr<EngineBridge> bridge_;
    bool missingDefaultModel_ = false;
    RemoteEndpoints* remotes_ = nullptr;
    quint64 generation_ = 0;  // only the newest load is applied
    QList<QThread*> threads_;
};

} // namespace arbor::app
