// The app-wide settings, kept as app settings in the store:
//   model.path      the GGUF file to load (default: the default model)
//   engine.threads  compute threads, 0 for one per core (default 0)
//   engine.kv_mib   KV cache memory budget in MiB (default 512)
//   engine.kv_disk_mib  KV disk tier budget in MiB (default 4096, 0: off)
//   engine.kv_type  KV element type: "f16" (default), "q8_0" or "f32"
//   engine.device   where the model runs: "auto" (default: the first GPU when it can,
//                   else the CPU), "cpu" or "cuda:N"
//   ui.theme        "system", "light" or "dark" (default "system")
//   chat.default_system_prompt   the system prompt of conversations that set none (default none)
//   chat.system_prompt_presets   named system prompts, a JSON array of {"name", "text"}
//   model.context_lengths  the context length chosen per model file, a JSON object
//                  {path: tokens}; a model without one gets the context it was trained with
//   model.folders  folders the model library lists besides the models directory, a JSON
//                  array of absolute paths
// Values are read once at start (load()) and written through on every change.
#pragma once

#include "store_worker.h"

#include <QMap>
#include <QObject>
#include <QStringList>
#include <QVariantList>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class AppSettings : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(QString modelPath READ modelPath WRITE setModelPath NOTIFY changed)
    Q_PROPERTY(int threads READ threads WRITE setThreads NOTIFY changed)
    Q_PROPERTY(int kvMemoryMiB READ kvMemoryMiB WRITE setKvMemoryMiB NOTIFY changed)
    Q_PROPERTY(int kvDiskMiB READ kvDiskMiB WRITE setKvDiskMiB NOTIFY changed)
    Q_PROPERTY(QString kvType READ kvType WRITE setKvType NOTIFY changed)
    Q_PROPERTY(QString device READ device NOTIFY changed)
    Q_PROPERTY(int maxKvDiskMiB READ maxKvDiskMiB CONSTANT)
    Q_PROPERTY(QString kvDiskDirectory READ kvDiskDirectory CONSTANT)  // arbor::kv_disk_dir()
    Q_PROPERTY(QString theme READ theme WRITE setTheme NOTIFY changed)
    Q_PROPERTY(int maxThreads READ maxThreads CONSTANT)
    Q_PROPERTY(QString defaultSystemPrompt READ defaultSystemPrompt WRITE setDefaultSystemPrompt NOTIFY changed)
    // [{name, text}], sorted by name; names are unique.
    Q_PROPERTY(QVariantList systemPromptPresets READ systemPromptPresets NOTIFY changed)
    // {model path: context length in tokens} for the models given one.
    Q_PROPERTY(QVariantMap contextLengths READ contextLengths NOTIFY changed)
    Q_PROPERTY(QStringList modelFolders READ modelFolders NOTIFY changed)
public:
    static constexpr const char* kDefaultSystemPromptKey = "chat.default_system_prompt";
    static constexpr int kMaxPresetName = 60;

    static constexpr int kDefaultKvMiB = 512;
    static constexpr int kMinKvMiB = 32;
    static constexpr int kMaxKvMiB = 65536;
    static constexpr int kDefaultKvDiskMiB = 4096;
    static constexpr int kMaxKvDiskMiB = 1 << 20;  // 1 TiB
    static constexpr int kMinContextLength = 256;

    explicit AppSettings(StoreService& store, QObject* parent = nullptr);

    QString modelPath() const { return modelPath_; }
    int threads() const { return threads_; }
    int kvMemoryMiB() const { return kvMiB_; }
    int kvDiskMiB() const { return kvDiskMiB_; }
    QString kvType() const { return kvType_; }
    QString device() const { return device_; }
    int maxKvDiskMiB() const { return kMaxKvDiskMiB; }
    QString kvDiskDirectory() const;
    QString theme() const { return theme_; }
    int maxThreads() const;
    QString defaultSystemPrompt() const { return defaultSystemPrompt_; }
    QVariantList systemPromptPresets() const;
    QVariantMap contextLengths() const;
    // The context length chosen for the model at `modelPath`, 0 when none was (the model's own).
    int contextLength(const QString& modelPath) const { return contextLengths_.value(modelPath, 0); }
    QStringList modelFolders() const { return modelFolders_; }

    void setModelPath(const QString& path);
    void setThreads(int threads);          // clamped to 0..maxThreads
    void setKvMemoryMiB(int mib);          // clamped to kMinKvMiB..kMaxKvMiB
    void setKvDiskMiB(int mib);            // clamped to 0..kMaxKvDiskMiB
    void setKvType(const QString& type);   // other values than f16, q8_0 and f32 are ignored
    void setTheme(const QString& theme);   // other values than the three are ignored
    // Keeps `device` (auto, cpu, cuda or cuda:N; "cuda" is kept as "cuda:0") for the next
    // model load; returns why it cannot ("" when it was kept).
    Q_INVOKABLE QString setDevice(const QString& device);
    void setDefaultSystemPrompt(const QString& text);

    // Why `name` cannot name a preset (empty, too long), or "" when it can; an existing
    // name is fine (saving replaces that preset).
    Q_INVOKABLE QString presetNameProblem(const QString& name) const;
    // Adds or replaces the preset `name`; returns presetNameProblem(name).
    Q_INVOKABLE QString savePreset(const QString& name, const QString& text);
    Q_INVOKABLE void removePreset(const QString& name);

    // Why `text` cannot be the context length of a model trained with `trainedContext`
    // tokens (not a whole number, under kMinContextLength, over what the model was
    // trained with), or "" when it can; empty text means the model's own.
    Q_INVOKABLE QString contextLengthProblem(const QString& text, int trainedContext) const;
    // Keeps `text` (empty: forget the choice) as the model's context length unless
    // contextLengthProblem refuses it; returns that problem. The model's engine is made
    // with it at the next load.
    Q_INVOKABLE QString setContextLength(const QString& modelPath, const QString& text, int trainedContext);

    // Adds a folder (a path or a file:// URL) for the model library; returns why it cannot
    // ("" when it could, or when it is listed already): it is not an existing folder.
    Q_INVOKABLE QString addModelFolder(const QString& pathOrUrl);
    Q_INVOKABLE void removeModelFolder(const QString& path);

    // Reads the stored values (defaults for what is missing or invalid), then loaded().
    void load();
    // Takes `path` for this run only (arbor --model PATH), over the stored choice.
    void overrideModelPath(const QString& path) { override_ = path; }

signals:
    void changed();
    void loaded();

private:
    void persist(const char* key, const QString& value);
    void persistModelFolders();

    StoreService& store_;
    QString modelPath_;
    int threads_ = 0;
    int kvMiB_ = kDefaultKvMiB;
    int kvDiskMiB_ = kDefaultKvDiskMiB;
    QString kvType_ = QStringLiteral("f16");
    QString device_ = QStringLiteral("auto");
    QString theme_ = QStringLiteral("system");
    QString defaultSystemPrompt_;
    QMap<QString, QString> presets_;  // name -> text
    QMap<QString, int> contextLengths_;  // model path -> tokens
    QStringList modelFolders_;
    QString override_;
};

} // namespace arbor::app
