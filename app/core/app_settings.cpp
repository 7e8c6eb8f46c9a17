#include "app_settings.h"

#include "arbor/paths.h"

#include <QThread>

#include <map>

namespace arbor::app {

AppSettings::AppSettings(StoreService& store, QObject* parent)
    : QObject(parent), store_(store), modelPath_(QString::fromStdString(arbor::default_model_path().string())) {}

int AppSettings::maxThreads() const { return std::max(1, QThread::idealThreadCount()); }

void AppSettings::load() {
    store_.call(
        this,
        [](arbor::Store& s) {
            std::map<std::string, std::string> values;
            for (const char* key : {"model.path", "engine.threads", "engine.kv_mib", "ui.theme"})
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
            if (const QString theme = get("ui.theme"); theme == "light" || theme == "dark" || theme == "system")
                theme_ = theme;
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

void AppSettings::setTheme(const QString& theme) {
    if (theme == theme_ || (theme != "light" && theme != "dark" && theme != "system")) return;
    theme_ = theme;
    persist("ui.theme", theme);
    emit changed();
}

} // namespace arbor::app
