#include "app_settings.h"

#include "arbor/backend.h"
#include "arbor/paths.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QDir>
#include <QFileInfo>
#include <QThread>
#include <QUrl>

#include <map>

namespace arbor::app {

namespace {

constexpr const char* kPresetsKey = "chat.system_prompt_presets";
constexpr const char* kContextLengthsKey = "model.context_lengths";
constexpr const char* kModelFoldersKey = "model.folders";

bool isKvType(const QString& type) {
    return arbor::kv_type_from_name(type.toStdString()).has_value();
}

// The stored form of a valid device name: "cuda" is "cuda:0", "cuda:07" is "cuda:7".
QString canonicalDevice(const QString& device) {
    if (!device.startsWith(QLatin1String("cuda"))) return device;
    return QStringLiteral("cuda:%1").arg(device == QLatin1String("cuda") ? 0 : device.mid(5).toInt());
}

QMap<QString, QString> presetsFromJson(const QString& json) {
    QMap<QString, QString> out;
    for (const QJsonValue& v : QJsonDocument::fromJson(json.toUtf8()).array()) {
        const QString name = v[QLatin1String("name")].toString().trimmed();
        if (!name.isEmpty()) out.insert(name, v[QLatin1String("text")].toString());
    }
    return out;
}

QString presetsToJson(const QMap<QString, QString>& presets) {
    QJsonArray array;
    for (auto it = presets.begin(); it != presets.end(); ++it)
        array.append(QJsonObject{{QStringLiteral("name"), it.key()}, {QStringLiteral("text"), it.value()}});
    return QString::fromUtf8(QJsonDocument(array).toJson(QJsonDocument::Compact));
}

QMap<QString, int> contextLengthsFromJson(const QString& json) {
    QMap<QString, int> out;
    const QJsonObject object = QJsonDocument::fromJson(json.toUtf8()).object();
    for (auto it = object.begin(); it != object.end(); ++it)
        if (const int tokens = it.value().toInt(); tokens >= AppSettings::kMinContextLength) out.insert(it.key(), tokens);
    return out;
}

QString contextLengthsToJson(const QMap<QString, int>& lengths) {
    QJsonObject object;
    for (auto it = lengths.begin(); it != lengths.end(); ++it) object.insert(it.key(), it.value());
    return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Compact));
}

} // namespace

AppSettings::AppSettings(StoreService& store, QObject* parent)
    : QObject(parent), store_(store), modelPath_(QString::fromStdString(arbor::default_model_path().string())) {}

int AppSettings::maxThreads() const { return std::max(1, QThread::idealThreadCount()); }

QString AppSettings::kvDiskDirectory() const { return QString::fromStdString(arbor::kv_disk_dir().string()); }

void AppSettings::load() {
    store_.call(
        this,
        [](arbor::Store& s) {
            std::map<std::string, std::string> values;
            for (const char* key : {"model.path", "engine.threads", "engine.kv_mib", "engine.kv_disk_mib",
                                    "engine.kv_type", "engine.device", "ui.theme", kDefaultSystemPromptKey, kPresetsKey,
                                    kContextLengthsKey, kModelFoldersKey})
                if (auto v = s.app_setting(key)) values[key] = *v;
            return values;
        },
        [this](std::map<std::string, std::string> values) {
            auto get = [&](const char* key) {
                auto it = values.find(key);
                return it == values.end() ? QString() : QString::fromStdString(it->second);
            };
            if (const QString path = get("model.path"); !path.isEmpty()) modelPath_ = path;
            bool ok = false;
            if (const int t = get("engine.threads").toInt(&ok); ok) threads_ = std::clamp(t, 0, maxThreads());
            if (const int kv = get("engine.kv_mib").toInt(&ok); ok) kvMiB_ = std::clamp(kv, kMinKvMiB, kMaxKvMiB);
            // A stored disk budget or KV type that is not one of the allowed values is
            // not guessed at: the default stands.
            if (const int disk = get("engine.kv_disk_mib").toInt(&ok); ok && disk >= 0 && disk <= kMaxKvDiskMiB)
                kvDiskMiB_ = disk;
            if (const QString type = get("engine.kv_type"); isKvType(type)) kvType_ = type;
            if (const QString device = get("engine.device");
                !device.isEmpty() && arbor::device_name_problem(device.toStdString()).empty())
                device_ = canonicalDevice(device);
            if (const QString theme = get("ui.theme"); theme == "light" || theme == "dark" || theme == "system")
                theme_ = theme;
            defaultSystemPrompt_ = get(kDefaultSystemPromptKey);
            presets_ = presetsFromJson(get(kPresetsKey));
            contextLengths_ = contextLengthsFromJson(get(kContextLengthsKey));
            modelFolders_.clear();
            for (const QJsonValue& v : QJsonDocument::fromJson(get(kModelFoldersKey).toUtf8()).array())
                if (const QString f = v.toString(); QDir::isAbsolutePath(f) && !modelFolders_.contains(f)) modelFolders_ << f;
            if (!override_.isEmpty()) modelPath_ = override_;
            emit changed();
            emit loaded();
        },
        [this](const QString&) {
            if (!override_.isEmpty()) {
                modelPath_ = override_;
                emit changed();
            }
            emit loaded();  // the defaults stand
        });
}

void AppSettings::persist(const char* key, const QString& value) {
    store_.call(this, [k = std::string(key), v = value.toStdString()](arbor::Store& s) { s.set_app_setting(k, v); },
                [] {});
}

void AppSettings::setModelPath(const QString& path) {
    if (path.isEmpty() || path == modelPath_) return;
    modelPath_ = path;
    persist("model.path", path);
    emit changed();
}

void AppSettings::setThreads(int threads) {
    threads = std::clamp(threads, 0, maxThreads());
    if (threads == threads_) return;
    threads_ = threads;
    persist("engine.threads", QString::number(threads));
    emit changed();
}

void AppSettings::setKvMemoryMiB(int mib) {
    mib = std::clamp(mib, kMinKvMiB, kMaxKvMiB);
    if (mib == kvMiB_) return;
    kvMiB_ = mib;
    persist("engine.kv_mib", QString::number(mib));
    emit changed();
}

void AppSettings::setKvDiskMiB(int mib) {
    mib = std::clamp(mib, 0, kMaxKvDiskMiB);
    if (mib == kvDiskMiB_) return;
    kvDiskMiB_ = mib;
    persist("engine.kv_disk_mib", QString::number(mib));
    emit changed();
}

void AppSettings::setKvType(const QString& type) {
    if (type == kvType_ || !isKvType(type)) return;
    kvType_ = type;
    persist("engine.kv_type", type);
    emit changed();
}

QString AppSettings::setDevice(const QString& device) {
    if (device.isEmpty() || !arbor::device_name_problem(device.toStdString()).empty())
        return tr("“%1” is no device: choose auto, cpu or cuda:N (N: the GPU's number)").arg(device);
    const QString canonical = canonicalDevice(device);
    if (canonical == device_) return {};
    device_ = canonical;
    persist("engine.device", canonical);
    emit changed();
    return {};
}

void AppSettings::setTheme(const QString& theme) {
    if (theme == theme_ || (theme != "light" && theme != "dark" && theme != "system")) return;
    theme_ = theme;
    persist("ui.theme", theme);
    emit changed();
}

void AppSettings::setDefaultSystemPrompt(const QString& text) {
    if (text == defaultSystemPrompt_) return;
    defaultSystemPrompt_ = text;
    persist(kDefaultSystemPromptKey, text);
    emit changed();
}

QVariantList AppSettings::systemPromptPresets() const {
    QVariantList out;
    for (auto it = presets_.begin(); it != presets_.end(); ++it)
        out.append(QVariantMap{{QStringLiteral("name"), it.key()}, {QStringLiteral("text"), it.value()}});
    return out;
}

QString AppSettings::presetNameProblem(const QString& name) const {
    const QString trimmed = name.trimmed();
    if (trimmed.isEmpty()) return tr("Give the preset a name");
    if (trimmed.size() > kMaxPresetName) return tr("At most %1 characters").arg(kMaxPresetName);
    return {};
}

QString AppSettings::savePreset(const QString& name, const QString& text) {
    if (QString problem = presetNameProblem(name); !problem.isEmpty()) return problem;
    presets_.insert(name.trimmed(), text);
    persist(kPresetsKey, presetsToJson(presets_));
    emit changed();
    return {};
}

void AppSettings::removePreset(const QString& name) {
    if (presets_.remove(name) == 0) return;
    persist(kPresetsKey, presetsToJson(presets_));
    emit changed();
}

QVariantMap AppSettings::contextLengths() const {
    QVariantMap out;
    for (auto it = contextLengths_.begin(); it != contextLengths_.end(); ++it) out.insert(it.key(), it.value());
    return out;
}

QString AppSettings::contextLengthProblem(const QString& text, int trainedContext) const {
    if (text.trimmed().isEmpty()) return {};
    bool ok = false;
    const int tokens = text.trimmed().toInt(&ok);
    if (!ok) return tr("must be a whole number of tokens");
    if (tokens < kMinContextLength) return tr("must be at least %1 tokens").arg(kMinContextLength);
    if (trainedContext > 0 && tokens > trainedContext)
        return tr("must be at most %1 tokens, the context the model was trained with").arg(trainedContext);
    return {};
}

QString AppSettings::setContextLength(const QString& modelPath, const QString& text, int trainedContext) {
    if (QString problem = contextLengthProblem(text, trainedContext); !problem.isEmpty()) return problem;
    if (modelPath.isEmpty()) return tr("no model is chosen");
    const int before = contextLength(modelPath);
    if (text.trimmed().isEmpty()) contextLengths_.remove(modelPath);
    else contextLengths_.insert(modelPath, text.trimmed().toInt());
    if (contextLength(modelPath) == before) return {};
    persist(kContextLengthsKey, contextLengthsToJson(contextLengths_));
    emit changed();
    return {};
}

} // namespace arbor::app

namespace arbor::app {

QString AppSettings::addModelFolder(const QString& pathOrUrl) {
    const QUrl url(pathOrUrl);
    const QString path = QDir::cleanPath(url.isLocalFile() ? url.toLocalFile() : pathOrUrl);
    if (path.isEmpty() || !QDir::isAbsolutePath(path) || !QFileInfo(path).isDir())
        return tr("%1 is not a folder.").arg(pathOrUrl);
    if (modelFolders_.contains(path)) return {};
    modelFolders_ << path;
    persistModelFolders();
    emit changed();
    return {};
}

void AppSettings::persistModelFolders() {
    const QJsonDocument folders(QJsonArray::fromStringList(modelFolders_));
    persist(kModelFoldersKey, QString::fromUtf8(folders.toJson(QJsonDocument::Compact)));
}

void AppSettings::removeModelFolder(const QString& path) {
    if (!modelFolders_.removeAll(path)) return;
    persistModelFolders();
    emit changed();
}

} // namespace arbor::app
