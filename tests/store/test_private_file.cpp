// write_private_file, which stores the API key and the cache namespace key: the file is
// 0600 whatever the umask or the old file's mode, a replaced file is swapped whole (a
// reader of the old one keeps reading the old contents), Keep never replaces, and a
// directory that cannot be written is an error that leaves nothing behind.
#include "arbor/error.h"
#include "arbor/private_file.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using arbor::ExistingFile;
using arbor::write_private_file;
namespace fs = std::filesystem;

namespace {

int mode_of(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? int(st.st_mode & 07777) : -1;
}

std::string contents_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

void put(const fs::path& path, const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::binary) << text;
    ::chmod(path.c_str(), mode);
}

std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

class TestPrivateFile : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    fs::path root() const { return fs::path(dir_.path().toStdString()); }

private slots:
    void init() {
        for (const auto& entry : fs::directory_iterator(root())) fs::remove_all(entry.path());
    }

    void createsTheFileForItsOwnerOnly() {
        const fs::path file = root() / "secret";
        const mode_t saved = ::umask(0277);  // would leave 0400: not even writable by its owner
        const bool written = write_private_file(file, std::string("key\0with a nul", 14));
        ::umask(saved);
        QVERIFY(written);
        QCOMPARE(mode_of(file), 0600);
        QCOMPARE(contents_of(file), std::string("key\0with a nul", 14));
        QCOMPARE(names_in(root()), std::vector<std::string>{"secret"});  // no temporary left
    }

    void replacesTheOldFileWhole() {
        const fs::path file = root() / "secret";
        put(file, "old secret", 0644);
        const int old_fd = ::open(file.c_str(), O_RDONLY);
        QVERIFY(old_fd >= 0);
        QVERIFY(write_private_file(file, "new"));
        QCOMPARE(contents_of(file), std::string("new"));
        QCOMPARE(mode_of(file), 0600);
        // A reader that had the old file open still reads it whole: it was swapped, not
        // rewritten in place.
        char buf[32] = {};
        const ssize_t n = ::pread(old_fd, buf, sizeof buf, 0);
        ::close(old_fd);
        QCOMPARE(std::string(buf, size_t(std::max<ssize_t>(n, 0))), std::string("old secret"));
        QCOMPARE(names_in(root()), std::vector<std::string>{"secret"});
    }

    void replacesALinkNotItsTarget() {
        const fs::path target = root() / "elsewhere";
        put(target, "not ours", 0644);
        fs::create_symlink(target, root() / "secret");
        QVERIFY(write_private_file(root() / "secret", "new"));
        QVERIFY(fs::is_regular_file(fs::symlink_status(root() / "secret")));
        QCOMPARE(contents_of(root() / "secret"), std::string("new"));
        QCOMPARE(contents_of(target), std::string("not ours"));
        QCOMPARE(mode_of(target), 0644);
    }

    void keepLeavesAnExistingFile() {
        const fs::path file = root() / "key";
        QVERIFY(write_private_file(file, "first", ExistingFile::Keep));
        QVERIFY(!write_private_file(file, "second", ExistingFile::Keep));
        QCOMPARE(contents_of(file), std::string("first"));
        QCOMPARE(mode_of(file), 0600);
        QCOMPARE(names_in(root()), std::vector<std::string>{"key"});
    }

    void refusesADirectoryItCannotWrite() {
        // A missing directory, and a "directory" that is a file: errors even for root.
        for (const fs::path& file : {root() / "missing" / "secret", root() / "plain" / "secret"}) {
            put(root() / "plain", "x", 0600);
            try {
                write_private_file(file, "s");
                QFAIL("wrote into a directory that cannot hold it");
            } catch (const arbor::Error& e) {
                QVERIFY2(std::string(e.what()).find(file.parent_path().string()) != std::string::npos, e.what());
            }
        }
        QCOMPARE(names_in(root()), std::vector<std::string>{"plain"});

        const fs::path locked = root() / "locked";
        fs::create_directory(locked);
        ::chmod(locked.c_str(), 0500);
        if (::access(locked.c_str(), W_OK) == 0) {
            ::chmod(locked.c_str(), 0700);
            QSKIP("this user may write a 0500 directory (root): the permission case cannot be shown here");
        }
        QVERIFY_THROWS_EXCEPTION(arbor::Error, write_private_file(locked / "secret", "s"));
        ::chmod(locked.c_str(), 0700);
        QVERIFY(names_in(locked).empty());
    }

    void replaceFailsWhereADirectoryStands() {
        // rename() cannot put a file over a non-empty directory: an error, and the
        // directory and the temporary are both as before (gone).
        fs::create_directories(root() / "secret" / "inside");
        QVERIFY_THROWS_EXCEPTION(arbor::Error, write_private_file(root() / "secret", "s"));
        QVERIFY(fs::is_directory(root() / "secret" / "inside"));
        QCOMPARE(names_in(root()), std::vector<std::string>{"secret"});
    }
};

QTEST_APPLESS_MAIN(TestPrivateFile)
#include "test_private_file.moc"
