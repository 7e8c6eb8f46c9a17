// The secret store in both of its places: files only the user can read (always tested),
// and the desktop keyring through a private Secret Service (gnome-keyring-daemon on a
// session bus of the test's own), skipped with the reason where that is not installed.
#include "secret_store.h"

#include "arbor/error.h"

#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

using arbor::app::SecretStore;
namespace fs = std::filesystem;

namespace {

// The permission bits of `path`; -1 when it does not exist.
int modeOf(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return -1;
    return int(st.st_mode & 07777);
}

} // namespace

class TestSecretStore : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void filesAreTheUsersAlone() {
        const fs::path directory = fs::path(dir_.path().toStdString()) / "files" / "secrets";
        fs::create_directories(directory.parent_path());
        SecretStore secrets(directory, /*useKeyring=*/false);
        QCOMPARE(secrets.place(), SecretStore::Place::File);
        QVERIFY(!secrets.read("api-key"));
        QCOMPARE(modeOf(directory), -1);  // nothing is created before a secret is stored

        secrets.write("api-key", "first key");
        QCOMPARE(modeOf(directory), 0700);
        QCOMPARE(modeOf(directory / "api-key"), 0600);
        QCOMPARE(secrets.read("api-key"), std::optional<std::string>("first key"));

        secrets.write("api-key", std::string("second\nkey\0with a zero", 21));
        QCOMPARE(secrets.read("api-key"), std::optional<std::string>(std::string("second\nkey\0with a zero", 21)));
        QCOMPARE(modeOf(directory / "api-key"), 0600);
        QCOMPARE(int(std::distance(fs::directory_iterator(directory), fs::directory_iterator())), 1);  // no leftovers

        // Another store over the same directory reads what this one wrote.
        QCOMPARE(SecretStore(directory, false).read("api-key"), secrets.read("api-key"));

        secrets.write("api-key", "");
        QVERIFY(!secrets.read("api-key"));
        QCOMPARE(modeOf(directory / "api-key"), -1);
        secrets.write("api-key", "");  // erasing what is not there is fine
    }

    void namesCannotLeaveTheDirectory() {
        SecretStore secrets(fs::path(dir_.path().toStdString()) / "names", false);
        for (const char* name : {"", "../escape", "a/b", ".hidden", "space name"}) {
            QVERIFY_THROWS_EXCEPTION(arbor::Error, secrets.write(name, "x"));
            QVERIFY_THROWS_EXCEPTION(arbor::Error, secrets.read(name));
        }
        QVERIFY(!fs::exists(fs::path(dir_.path().toStdString()) / "escape"));
    }

    void unreadableDirectoryIsAnError() {
        if (::geteuid() == 0) QSKIP("running as root: file permissions do not stop reads");
        const fs::path directory = fs::path(dir_.path().toStdString()) / "locked";
        SecretStore secrets(directory, false);
        secrets.write("api-key", "k");
        fs::permissions(directory, fs::perms::none);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, secrets.read("api-key"));
        fs::permissions(directory, fs::perms::owner_all);
    }

    // The keyring through a Secret Service of the test's own: gnome-keyring-daemon with
    // a new login keyring, on a private session bus.
    void keyringWhenAServiceRuns() {
        const QString dbus = QStandardPaths::findExecutable(QStringLiteral("dbus-daemon"));
        const QString keyring = QStandardPaths::findExecutable(QStringLiteral("gnome-keyring-daemon"));
        if (dbus.isEmpty() || keyring.isEmpty())
            QSKIP("no dbus-daemon or gnome-keyring-daemon (Debian: dbus, gnome-keyring): the keyring path is untested here");

        QProcess bus;
        bus.start(dbus, {QStringLiteral("--session"), QStringLiteral("--nofork"), QStringLiteral("--print-address=1")});
        QVERIFY(bus.waitForReadyRead(10000));
        const QByteArray address = bus.readLine().trimmed();
        QVERIFY(!address.isEmpty());
        qputenv("DBUS_SESSION_BUS_ADDRESS", address);

        QProcess daemon;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        QVERIFY(QDir().mkpath(dir_.path() + QStringLiteral("/keyring-data")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), dir_.path() + QStringLiteral("/keyring-data"));
        daemon.setProcessEnvironment(env);
        daemon.start(keyring, {QStringLiteral("--foreground"), QStringLiteral("--unlock"), QStringLiteral("--components=secrets")});
        QVERIFY(daemon.waitForStarted(10000));
        daemon.write("arbor-test");  // an empty password would leave no login keyring
        daemon.closeWriteChannel();
        // Asked before the daemon owns its bus name, the bus would start another one
        // without the password (and so without a login keyring).
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(dir_.path() + QStringLiteral("/keyring-data/keyrings/login.keyring")), 10000);

        const fs::path directory = fs::path(dir_.path().toStdString()) / "unused";
        std::optional<SecretStore> secrets;
        QTRY_VERIFY_WITH_TIMEOUT((secrets.emplace(directory), secrets->place() == SecretStore::Place::Keyring), 10000);
        secrets->write("api-key", "kept in the keyring");
        QCOMPARE(secrets->read("api-key"), std::optional<std::string>("kept in the keyring"));
        QCOMPARE(SecretStore(directory).read("api-key"), std::optional<std::string>("kept in the keyring"));
        QVERIFY(!fs::exists(directory));  // no file was written
        secrets->write("api-key", "");
        QVERIFY(!secrets->read("api-key"));

        daemon.terminate();
        daemon.waitForFinished(5000);
        bus.terminate();
        bus.waitForFinished(5000);
    }
};

QTEST_GUILESS_MAIN(TestSecretStore)
#include "test_secret_store.moc"
