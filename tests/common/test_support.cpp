#include "test_support.h"

#include "arbor/paths.h"

#include <QDir>

namespace arbor::test {

std::filesystem::path test_data_dir() { return ARBOR_TEST_DATA_DIR; }

std::filesystem::path model_path() { return arbor::default_model_path(); }

std::string missing_model_message() {
    const auto path = model_path();
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) return {};
    return "default model not found at " + path.string() +
           " - run 'bash packaging/setup.sh test' (or set ARBOR_MODEL to a GGUF file)";
}

PrivateCacheHome::PrivateCacheHome() : dir_(pattern()), env_("XDG_CACHE_HOME", dir_.path().toLocal8Bit()) {}

QString PrivateCacheHome::pattern() {
    QString base = qEnvironmentVariable("XDG_CACHE_HOME");
    if (base.isEmpty()) base = QDir::tempPath();
    QDir().mkpath(base);
    return base + QStringLiteral("/arbor-test-XXXXXX");
}

} // namespace arbor::test
