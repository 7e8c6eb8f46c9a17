#include "arbor/paths.h"

#include <cstdlib>

namespace arbor {

std::filesystem::path data_dir() {
    // XDG says relative values are invalid and must be ignored.
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg == '/')
        return std::filesystem::path(xdg) / "arbor";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home && *home ? home : ".") / ".local" / "share" / "arbor";
}

std::filesystem::path cache_dir() {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::filesystem::path(xdg) / "arbor";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home && *home ? home : ".") / ".cache" / "arbor";
}

std::filesystem::path kv_disk_dir() { return cache_dir() / "kv"; }

std::filesystem::path api_namespace_key_file() { return cache_dir() / "api-namespace-key"; }

std::filesystem::path models_dir() { return data_dir() / "models"; }

std::filesystem::path default_model_path() {
    if (const char* env = std::getenv("ARBOR_MODEL"); env && *env) return env;
    return models_dir() / kDefaultModelFile;
}

} // namespace arbor
