#include "secret_store.h"

#include "arbor/error.h"
#include "arbor/private_file.h"

#include <libsecret/secret.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

namespace arbor::app {

namespace {

namespace fs = std::filesystem;

// Items of the keyring are found by this schema's name and their "name" attribute.
const SecretSchema* schema() {
    static const SecretSchema s = {
        "org.arbor.Secret", SECRET_SCHEMA_NONE, {{"name", SECRET_SCHEMA_ATTRIBUTE_STRING}, {nullptr, SecretSchemaAttributeType(0)}}};
    return &s;
}

struct GErrorFree {
    void operator()(GError* e) const { g_error_free(e); }
};
using ErrorPtr = std::unique_ptr<GError, GErrorFree>;

[[noreturn]] void keyringFailed(const char* what, const std::string& name, GError* error) {
    const ErrorPtr owned(error);
    throw Error(std::string("cannot ") + what + " the secret '" + name + "' in the keyring: " +
                (error ? error->message : "unknown error"));
}

bool validName(const std::string& name) {
    if (name.empty() || name[0] == '.') return false;
    for (const char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') return false;
    return true;
}

// Whether a Secret Service answers on the session bus: a lookup succeeds (it starts an
// activatable service, and fails where there is no bus or no service).
bool keyringAvailable() {
    GError* error = nullptr;
    gchar* value = secret_password_lookup_sync(schema(), nullptr, &error, "name", "", nullptr);
    secret_password_free(value);
    if (!error) return true;
    g_error_free(error);
    return false;
}

[[noreturn]] void fileFailed(const char* what, const fs::path& file) {
    throw Error(std::string("cannot ") + what + " " + file.string() + ": " + std::strerror(errno));
}

} // namespace

SecretStore::SecretStore(fs::path directory, bool useKeyring) : directory_(std::move(directory)) {
    if (useKeyring && keyringAvailable()) place_ = Place::Keyring;
}

fs::path SecretStore::fileOf(const std::string& name) const {
    if (!validName(name)) throw Error("'" + name + "' is not a secret's name");
    return directory_ / name;
}

std::optional<std::string> SecretStore::read(const std::string& name) const {
    const fs::path file = fileOf(name);
    if (place_ == Place::Keyring) {
        GError* error = nullptr;
        gchar* value = secret_password_lookup_sync(schema(), nullptr, &error, "name", name.c_str(), nullptr);
        if (error) keyringFailed("read", name, error);
        if (!value) return std::nullopt;
        std::string out(value);
        secret_password_free(value);
        return out;
    }
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return std::nullopt;
        fileFailed("read", file);
    }
    std::string out;
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            ::close(fd);
            fileFailed("read", file);
        }
        if (n == 0) break;
        out.append(buffer, size_t(n));
    }
    ::close(fd);
    return out;
}

void SecretStore::write(const std::string& name, const std::string& value) {
    const fs::path file = fileOf(name);
    if (place_ == Place::Keyring) {
        GError* error = nullptr;
        if (value.empty()) {
            secret_password_clear_sync(schema(), nullptr, &error, "name", name.c_str(), nullptr);
            if (error) keyringFailed("erase", name, error);
        } else {
            const std::string label = "Arbor: " + name;
            secret_password_store_sync(schema(), SECRET_COLLECTION_DEFAULT, label.c_str(), value.c_str(), nullptr,
                                       &error, "name", name.c_str(), nullptr);
            if (error) keyringFailed("store", name, error);
        }
        return;
    }
    if (value.empty()) {
        if (::unlink(file.c_str()) != 0 && errno != ENOENT) fileFailed("erase", file);
        return;
    }
    if (::mkdir(directory_.c_str(), 0700) != 0 && errno != EEXIST) fileFailed("create the directory", directory_);
    // A reader sees the old secret or the new, and no other user ever can read either.
    write_private_file(file, value);
}

} // namespace arbor::app
