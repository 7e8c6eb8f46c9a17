// Shared helpers for the test suites: where fixtures and the default model are.
#pragma once

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <optional>
#include <string>

namespace arbor::test {

// tests/data in the source tree: everything the tests read lives there.
std::filesystem::path test_data_dir();
// The default model as installed by set-up ($ARBOR_MODEL overrides).
std::filesystem::path model_path();
// Empty when the model is present, else a message telling how to install it.
std::string missing_model_message();

// Sets an environment variable (or unsets it, for nullopt) for the scope's lifetime;
// child processes started meanwhile inherit it. Restores the previous state after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::optional<QByteArray>& value)
        : name_(name), saved_(qgetenv(name)), had_(qEnvironmentVariableIsSet(name)) {
        if (value) qputenv(name, *value);
        else qunsetenv(name);
    }
    ~ScopedEnv() {
        if (had_) qputenv(name_, saved_);
        else qunsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    QByteArray saved_;
    bool had_;
};

// For its lifetime, XDG_CACHE_HOME is a fresh directory below the one it was (the build
// directory's test cache under ctest), removed after: the app's KV disk tier then starts
// empty, and pages one process left cannot serve another's prompts.
class PrivateCacheHome {
public:
    PrivateCacheHome();
    QString path() const { return dir_.path(); }

private:
    static QString pattern();
    QTemporaryDir dir_;
    ScopedEnv env_;
};

} // namespace arbor::test

// Fails (never skips) a test that needs the default model when it is missing.
#define ARBOR_REQUIRE_MODEL()                                                       \
    do {                                                                            \
        const std::string arbor_missing_ = arbor::test::missing_model_message();   \
        if (!arbor_missing_.empty()) QFAIL(arbor_missing_.c_str());                 \
    } while (false)
