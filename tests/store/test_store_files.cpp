// Who may read the database: the store creates its files 0600 and a new directory 0700
// whatever the umask, tightens files (and Arbor's own data directory) left more open
// by an older version, and leaves a directory the user chose, and a read-only file's
// missing write bit, as they were.
#include "arbor/store.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sys/stat.h>

using arbor::Role;
using arbor::Store;
namespace fs = std::filesystem;

namespace {

// Permission bits of `path`, or -1 when it does not exist.
int mode_of(const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

void add_some_rows(Store& store) {
    const auto c = store.create_conversation("private");
    store.add_message(c, std::nullopt, Role::User, "my secret question", {});
}

QString octal(int mode) { return QString::number(mode, 8); }

} // namespace

class TestStoreFiles : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    mode_t saved_umask_ = 0;

    fs::path root() const { return fs::path(dir_.path().toStdString()); }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        saved_umask_ = ::umask(022);  // the common default, under which SQLite would make 0644 files
    }
    void cleanupTestCase() { ::umask(saved_umask_); }

    void newFilesAndDirectoriesAreTheOwnersAlone() {
        const fs::path db = root() / "new" / "arbor" / "arbor.db";
        {
            Store store(db);
            add_some_rows(store);
            QVERIFY(fs::exists(db.string() + "-wal"));
            for (const char* part : {"", "-wal", "-shm", ".lock"})
                QVERIFY2(mode_of(db.string() + part) == 0600,
                         qPrintable(QString("arbor.db%1: %2").arg(part, octal(mode_of(db.string() + part)))));
        }
        QCOMPARE(octal(mode_of(db.parent_path())), octal(0700));
        QCOMPARE(octal(mode_of(db.parent_path().parent_path())), octal(0700));
        QCOMPARE(octal(mode_of(db)), octal(0600));
    }

    void openFilesOfAnOlderVersionAreTightened() {
        const fs::path dir = root() / "older";
        fs::create_directory(dir);
        fs::permissions(dir, fs::perms(0755));
        const fs::path db = dir / "arbor.db";
        { Store store(db); add_some_rows(store); }
        for (const char* part : {"", ".lock"}) fs::permissions(db.string() + part, fs::perms(0644));
        // A WAL left by a crash, readable by everyone.
        { std::ofstream(db.string() + "-wal").put('\0'); }
        fs::resize_file(db.string() + "-wal", 0);
        fs::permissions(db.string() + "-wal", fs::perms(0666));
        {
            Store store(db);
            QCOMPARE(store.list_conversations().size(), size_t(1));
            for (const char* part : {"", "-wal", "-shm", ".lock"})
                QVERIFY2(mode_of(db.string() + part) == 0600,
                         qPrintable(QString("arbor.db%1: %2").arg(part, octal(mode_of(db.string() + part)))));
        }
        // A directory the user chose for the file is theirs to set.
        QCOMPARE(octal(mode_of(dir)), octal(0755));
    }

    void arborsOwnDataDirectoryIsTightened() {
        const fs::path xdg = root() / "xdg";
        const arbor::test::ScopedEnv env("XDG_DATA_HOME", QByteArray::fromStdString(xdg.string()));
        fs::create_directories(xdg / "arbor");
        fs::permissions(xdg / "arbor", fs::perms(0755));
        { Store store(Store::default_path()); }
        QCOMPARE(octal(mode_of(xdg / "arbor")), octal(0700));
        QCOMPARE(octal(mode_of(xdg / "arbor" / "arbor.db")), octal(0600));
        QCOMPARE(octal(mode_of(xdg)), octal(0755));  // only Arbor's own
    }

    void readOnlyFileStaysReadOnly() {
        const fs::path db = root() / "readonly.db";
        { Store store(db); add_some_rows(store); }
        fs::permissions(db, fs::perms(0444));
        fs::remove(db.string() + "-wal");
        fs::remove(db.string() + "-shm");
        try {
            Store store(db);
            QCOMPARE(store.list_conversations().size(), size_t(1));
        } catch (const arbor::StoreError&) {
            // Root may or may not open it for writing; either way the mode is what counts.
        }
        QCOMPARE(octal(mode_of(db)), octal(0400));
    }
};

QTEST_APPLESS_MAIN(TestStoreFiles)
#include "test_store_files.moc"
