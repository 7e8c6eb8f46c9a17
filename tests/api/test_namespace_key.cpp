// The file that keeps the API's cache namespace key across restarts: created private
// (0600) and read back unchanged; a file that is not a usable key (corrupt, short, open
// to other users, a link, a FIFO) is replaced by a new private key with a warning; where
// no key can be stored, one serves this run only, with a warning, and nothing half
// written is left behind.
#include "api/namespace_key.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sys/stat.h>

namespace fs = std::filesystem;
using arbor::api::load_or_create_namespace_key;

namespace {

void write_file(const fs::path& path, const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    ::chmod(path.c_str(), mode);
}

mode_t mode_of(const fs::path& path) {
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0) return 0;
    return st.st_mode;
}

size_t entries(const fs::path& dir) {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
}

} // namespace

class TestNamespaceKey : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    fs::path dir() const { return tmp_.path().toStdString(); }

private slots:
    void createsAPrivateFileAndReadsItBack() {
        const fs::path file = dir() / "new" / "api-namespace-key";
        const auto first = load_or_create_namespace_key(file);
        QVERIFY2(first.warning.empty(), first.warning.c_str());
        QVERIFY(!first.from_file);
        QVERIFY(S_ISREG(mode_of(file)));
        QCOMPARE(mode_of(file) & 0777, mode_t(0600));
        QCOMPARE(fs::file_size(file), uintmax_t(33));
        QCOMPARE(entries(file.parent_path()), size_t(1));  // no temporary left
        const auto again = load_or_create_namespace_key(file);
        QVERIFY2(again.warning.empty(), again.warning.c_str());
        QVERIFY(again.from_file);
        QVERIFY(again.key == first.key);
        // Another file, another key.
        QVERIFY(load_or_create_namespace_key(dir() / "other" / "key").key != first.key);
    }

    void readsAKeyWrittenBefore() {
        const fs::path file = dir() / "given-key";
        write_file(file, "00112233445566778899aabbccddeeff\n", 0600);
        const auto loaded = load_or_create_namespace_key(file);
        QVERIFY2(loaded.warning.empty(), loaded.warning.c_str());
        QVERIFY(loaded.from_file);
        QCOMPARE(loaded.key[0], uint64_t(0x0011223344556677ull));
        QCOMPARE(loaded.key[1], uint64_t(0x8899aabbccddeeffull));
    }

    void replacesAFileThatIsNotAUsableKey_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("why");
        QTest::newRow("corrupt") << "corrupt" << "does not hold a key";
        QTest::newRow("short") << "short" << "does not hold a key";
        QTest::newRow("upper-case digits") << "upper" << "does not hold a key";
        QTest::newRow("readable by others") << "open" << "readable or writable by other users";
        QTest::newRow("symbolic link") << "link" << "cannot be read";
        QTest::newRow("FIFO") << "fifo" << "is not a regular file";
    }
    void replacesAFileThatIsNotAUsableKey() {
        QFETCH(QString, kind);
        QFETCH(QString, why);
        const fs::path sub = dir() / ("bad-" + kind.toStdString());
        fs::create_directories(sub);
        const fs::path file = sub / "key";
        const std::string valid = "00112233445566778899aabbccddeeff\n";
        if (kind == "corrupt") write_file(file, "not a key at all\n", 0600);
        else if (kind == "short") write_file(file, valid.substr(0, 16) + "\n", 0600);
        else if (kind == "upper") write_file(file, "00112233445566778899AABBCCDDEEFF\n", 0600);
        else if (kind == "open") write_file(file, valid, 0644);
        else if (kind == "link") {
            write_file(sub / "target", valid, 0600);
            fs::create_symlink(sub / "target", file);
        } else QCOMPARE(::mkfifo(file.c_str(), 0600), 0);

        const auto loaded = load_or_create_namespace_key(file);
        QVERIFY(!loaded.from_file);
        QVERIFY2(QString::fromStdString(loaded.warning).contains(why), loaded.warning.c_str());
        QVERIFY2(loaded.warning.find("a new key replaces it") != std::string::npos, loaded.warning.c_str());
        QVERIFY(loaded.key[0] != 0x0011223344556677ull);
        // Replaced by a private regular file that the next start reads back.
        QVERIFY(S_ISREG(mode_of(file)));
        QCOMPARE(mode_of(file) & 0777, mode_t(0600));
        const auto again = load_or_create_namespace_key(file);
        QVERIFY2(again.warning.empty(), again.warning.c_str());
        QVERIFY(again.from_file);
        QVERIFY(again.key == loaded.key);
    }

    void keyServesOneRunWhenItCannotBeStored_data() {
        QTest::addColumn<QString>("kind");
        QTest::newRow("a directory in its place") << "directory";
        QTest::newRow("a file in its directory's place") << "file parent";
    }
    void keyServesOneRunWhenItCannotBeStored() {
        QFETCH(QString, kind);
        const fs::path sub = dir() / ("unstorable-" + kind.toStdString());
        fs::create_directories(sub);
        fs::path file = sub / "key";
        if (kind == "directory") {
            fs::create_directories(file);
            write_file(file / "inside", "x", 0600);  // a non-empty directory: rename cannot replace it
        } else {
            write_file(sub / "plain", "x", 0600);
            file = sub / "plain" / "key";
        }
        const auto one = load_or_create_namespace_key(file);
        const auto two = load_or_create_namespace_key(file);
        QVERIFY2(one.warning.find("this run only") != std::string::npos, one.warning.c_str());
        QVERIFY(!one.from_file && !two.from_file);
        QVERIFY(one.key != two.key);
        QCOMPARE(entries(sub), size_t(1));  // no temporary left
    }
};

QTEST_APPLESS_MAIN(TestNamespaceKey)
#include "test_namespace_key.moc"
