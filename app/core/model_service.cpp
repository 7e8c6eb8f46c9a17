#include "model_service.h"

#include "model_file_info.h"

#include "arbor/chat_template.h"
#include "arbor/load_warnings.h"
#include "arbor/paths.h"

#include <QFile>
#include <QFileInfo>
#include <QMetaObject>
#include <QThread>

namespace arbor::app {

namespace {

// Reads the file once so its pages are in the page cache before the first prompt; this
// is the slow part of opening a large model on a cold disk, and it gives real progress.
void warmPageCache(const QString& path, const std::function<void(double)>& progress) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return;  // Model::load reports the real error
    const qint64 size = std::max<qint64>(file.size(), 1);
    constexpr qint64 kChunk = 8 << 20;
    QByteArray buffer(kChunk, Qt::Uninitialized);
    qint64 done = 0;
    for (qint64 n; (n = file.read(buffer.data(), kChunk)) > 0;) {
        done += n;
        progress(double(done) / double(size));
    }
}

// `context`: what the engine takes, which the context length setting or the KV memory
// may make less than what the model was trained with. Not the architecture: the model
// picker beside these details names it.
QString describe(const arbor::Model& model, const QString& path, int context) {
    const auto& c = model.config();
    const double mib = double(QFileInfo(path).size()) / double(1 << 20);
    return QStringLiteral("%1 layers · %2 MiB · context %3")
               .arg(c.n_layer)
               .arg(mib, 0, 'f', 0)
               .arg(context) +
           (context < c.n_ctx_train ? QStringLiteral(" of %1").arg(c.n_ctx_train) : QString());
}

} // namespace

ModelService::ModelService(QObject* parent) : QObject(parent) {
    qRegisterMetaType<arbor::app::ReplyStats>();
}

ModelService::~ModelService() {
    bridge_.reset();  // cancels what is running; later events are dropped
    auto last = std::move(current_);
    if (last) runInBackground([m = std::move(last)]() mutable { m.reset(); });
    for (QThread* t : std::as_const(threads_)) {
        t->wait();
        delete t;
    }
}

QString ModelService::name() const {
    return path_.isEmpty() ? QString() : QFileInfo(path_).completeBaseName();
}

void ModelService::runInBackground(std::function<void()> job) {
    // Finished threads are reaped here, on the GUI thread, so the list needs no lock.
    for (auto it = threads_.begin(); it != threads_.end();) {
        if ((*it)->isFinished()) {
            delete *it;
            it = threads_.erase(it);
        } else {
            ++it;
        }
    }
    QThread* t = QThread::create(std::move(job));
    t->setObjectName(QStringLiteral("arbor-model"));
    threads_.push_back(t);
    t->start();
}

void ModelService::setState(const QString& state) {
    state_ = state;
    emit stateChanged();
}

void ModelService::load(const QString& path, int threads, int kvMiB, int kvDiskMiB, const QString& kvType,
                        int contextTokens, const QString& device) {
    const quint64 generation = ++generation_;
    if (current_) {
        emit aboutToUnload();
        bridge_.reset();
    }
    // The old model is released on the loading thread before the new one is mapped, so
    // two large models never sit in memory together.
    auto old = std::move(current_);
    path_ = path;
    error_.clear();
    missingDefaultModel_ = false;
    details_.clear();
    setWarning({});
    progress_ = 0.0;
    emit progressChanged();
    setState(QStringLiteral("loading"));
    emit modelChanged();

    runInBackground([this, generation, path, threads, kvMiB, kvDiskMiB, kvType, contextTokens, device,
                     old = std::move(old)]() mutable {
        old.reset();
        auto report = [this, generation](double p) {
            QMetaObject::invokeMethod(this, [this, generation, p] {
                if (generation != generation_) return;
                progress_ = 0.9 * p;
                emit progressChanged();
            }, Qt::QueuedConnection);
        };
        try {
            warmPageCache(path, report);
            auto loaded = std::make_shared<LoadedModel>();
            loaded->path = path;
            loaded->name = QFileInfo(path).completeBaseName();
            const ModelFileInfo header = readModelFileInfo(path.toStdString());  // the header only
            loaded->displayName = QString::fromStdString(header.name);
            loaded->quantType = QString::fromStdString(header.quantType);
            loaded->architecture = QString::fromStdString(header.architecture);
            loaded->model = arbor::Model::load(path.toStdString());
            arbor::EngineOptions options;
            options.backend.threads = std::max(0, threads);
            options.backend.kv_budget_bytes = size_t(std::max(16, kvMiB)) << 20;
            options.backend.kv_type = arbor::kv_type_from_name(kvType.toStdString()).value_or(arbor::KvType::F16);
            options.kv_disk_bytes = uint64_t(std::max(0, kvDiskMiB)) << 20;
            options.context_tokens = std::max(0, contextTokens);
            options.backend.device = device.toStdString();
            options.backend.cpu_fallback = true;
            loaded->engine = std::make_unique<arbor::Engine>(*loaded->model, options);
            loaded->formatter =
                std::make_unique<arbor::ChatFormatter>(loaded->model->tokenizer(), loaded->model->chat_template_source());
            for (const std::string& w : arbor::model_load_warnings(*loaded->model, *loaded->formatter)) {
                qWarning("%s: %s", qUtf8Printable(path), w.c_str());
                loaded->warnings << QString::fromStdString(w);
            }
            QMetaObject::invokeMethod(this, [this, generation, loaded]() mutable {
                this->loaded(generation, std::move(loaded));
            }, Qt::QueuedConnection);
        } catch (const std::exception& e) {
            QString message = QString::fromUtf8(e.what());
            const bool missingDefault =
                !QFileInfo::exists(path) && path == QString::fromStdString(arbor::default_model_path().string());
            if (missingDefault) message += QStringLiteral("; %1").arg(QLatin1StringView(arbor::kDefaultModelInstallHint));
            QMetaObject::invokeMethod(this, [this, generation, message, missingDefault] {
                failed(generation, message, missingDefault);
            }, Qt::QueuedConnection);
        }
    });
}

void ModelService::loaded(quint64 generation, std::shared_ptr<LoadedModel> model) {
    if (generation != generation_) {
        runInBackground([m = std::move(model)]() mutable { m.reset(); });
        return;
    }
    current_ = std::move(model);
    bridge_ = std::make_unique<EngineBridge>(*current_->engine);
    details_ = describe(*current_->model, current_->path, current_->engine->context_size());
    progress_ = 1.0;
    emit progressChanged();
    QStringList sentences;
    for (const QString& w : current_->warnings)
        sentences << tr("%1: %2.").arg(current_->displayName.isEmpty() ? current_->name : current_->displayName, w);
    setWarning(sentences.join(u'\n'));
    setState(QStringLiteral("ready"));
    emit modelChanged();
}

void ModelService::failed(quint64 generation, const QString& message, bool missingDefaultModel) {
    if (generation != generation_) return;
    error_ = message;
    missingDefaultModel_ = missingDefaultModel;
    setState(QStringLiteral("failed"));
}

void ModelService::setWarning(const QString& warning) {
    if (warning == warning_) return;
    warning_ = warning;
    emit warningChanged();
}

void ModelService::dismissWarning() { setWarning({}); }

QString ModelService::device() const {
    return current_ ? QString::fromStdString(current_->engine->device()) : QString();
}

int ModelService::contextSize() const {
    return current_ ? current_->engine->context_size() : 0;
}

int ModelService::trainedContext() const {
    return current_ ? current_->model->config().n_ctx_train : 0;
}

Reply* ModelService::start(arbor::Request request) {
    return bridge_ ? bridge_->submit(std::move(request)) : nullptr;
}

} // namespace arbor::app
