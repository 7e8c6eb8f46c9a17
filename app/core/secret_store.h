// The app's secrets (the API key; later a Hugging Face token), kept out of the database:
// in the desktop keyring through libsecret when a Secret Service answers on the session
// bus, else each in a file of its own that only the user can read (0600, in a 0700
// directory). Which of the two is chosen once, when the store is made; a keyring that
// fails later is reported, never silently replaced by a file.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace arbor::app {

class SecretStore {
public:
    enum class Place { Keyring, File };

    // `directory`: where secret files go when there is no keyring (created 0700 when
    // first needed). useKeyring false: files only (tests, and a user who wants no keyring).
    explicit SecretStore(std::filesystem::path directory, bool useKeyring = true);

    Place place() const { return place_; }
    // The secret stored under `name` (letters, digits, '.', '-', '_'); nullopt when none.
    // Throws arbor::Error when it cannot be read.
    std::optional<std::string> read(const std::string& name) const;
    // Stores `value` under `name`, replacing any; an empty value erases it. Throws
    // arbor::Error when it cannot be stored.
    void write(const std::string& name, const std::string& value);

private:
    std::filesystem::path fileOf(const std::string& name) const;

    std::filesystem::path directory_;
    Place place_ = Place::File;
};

} // namespace arbor::app
