// The disk tier's files (kv/disk_store.h): pages round-trip bit-exactly, also through a
// reopened store; a page is used only for its exact key, parent and tokens; truncated,
// flipped, foreign-model and other-format files are skipped and deleted; the budget
// removes other formats first, then the least recently used; an unwritable directory
// or a failing write turns the store off; a writer killed (SIGKILL) while spilling
// leaves a store of whole pages.
#include "disk_test_pages.h"
#include "kv/disk_store.h"

#include <QtTest>

#include <csignal>
#include <fstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using arbor::kv::DiskFormat;
using arbor::kv::DiskStore;
using arbor::kv::PageKey;
using arbor::kv::chain_key;
using arbor::kv::test::page_bytes_for;
using arbor::kv::test::tokens_for;
namespace fs = std::filesystem;

namespace {

constexpr int32_t kPage = 16;
constexpr uint64_t kBytes = 3000;  // not a multiple of 8: the checksum's tail is exercised

DiskFormat format_of(uint64_t model) { return DiskFormat{PageKey{model, 7}, 0, kPage, kBytes}; }

struct Chain {
    std::vector<PageKey> keys, parents;
};

// n pages chained from a root: page i holds tokens_for(i).
Chain chain_of(uint64_t model, int n) {
    Chain c;
    PageKey parent = arbor::kv::root_key(PageKey{model, 7}, 0);
    for (int i = 0; i < n; ++i) {
        const auto t = tokens_for(i, kPage);
        c.parents.push_back(parent);
        parent = chain_key(parent, std::span<const int32_t>(t));
        c.keys.push_back(parent);
    }
    return c;
}

bool put(DiskStore& s, const Chain& c, int i) {
    const auto t = tokens_for(i, kPage);
    return s.put(c.keys[size_t(i)], c.parents[size_t(i)], t, page_bytes_for(c.keys[size_t(i)], kBytes));
}

// True when page i reads back with exactly the bytes written.
bool get_exact(DiskStore& s, const Chain& c, int i) {
    const auto t = tokens_for(i, kPage);
    std::vector<std::byte> out(kBytes);
    return s.get(c.keys[size_t(i)], c.parents[size_t(i)], t, out) && out == page_bytes_for(c.keys[size_t(i)], kBytes);
}

size_t page_files(const fs::path& dir) {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".kvp";
    return n;
}

} // namespace

class TestDiskStore : public QObject {
    Q_OBJECT

private slots:
    void roundTripIsBitExactAndSurvivesReopen() {
        QTemporaryDir tmp;
        const Chain c = chain_of(1, 5);
        {
            DiskStore s(tmp.path().toStdString(), format_of(1), 1 << 20);
            QVERIFY2(s.enabled(), s.disabled_reason().c_str());
            for (int i = 0; i < 5; ++i) QVERIFY(put(s, c, i));
            QVERIFY(!put(s, c, 2));  // already there
            for (int i = 0; i < 5; ++i) QVERIFY(get_exact(s, c, i));
            s.check_invariants();
        }
        DiskStore again(tmp.path().toStdString(), format_of(1), 1 << 20);
        QCOMPARE(again.pages(), size_t(5));
        for (int i = 0; i < 5; ++i) QVERIFY(get_exact(again, c, i));
        again.check_invariants();
        QCOMPARE(again.counters().read, uint64_t(5));
    }

    void onlyTheExactTokensAndParentAreServed() {
        QTemporaryDir tmp;
        DiskStore s(tmp.path().toStdString(), format_of(1), 1 << 20);
        const Chain c = chain_of(1, 2);
        QVERIFY(put(s, c, 0));
        QVERIFY(put(s, c, 1));
        std::vector<std::byte> out(kBytes);
        auto other = tokens_for(0, kPage);
        other[3] += 1;
        // The right key with other tokens: a (simulated) hash collision is never trusted.
        QVERIFY(!s.get(c.keys[0], c.parents[0], other, out));
        QVERIFY(!s.contains(c.keys[0]));
        QCOMPARE(s.counters().rejected, uint64_t(1));
        const auto t1 = tokens_for(1, kPage);
        QVERIFY(!s.get(c.keys[1], c.parents[0], t1, out));  // wrong parent
        QCOMPARE(page_files(s.dir()), size_t(0));
        s.check_invariants();
    }

    void damagedAndForeignFilesAreSkippedAndDeleted() {
        QTemporaryDir tmp;
        const Chain c = chain_of(1, 4);
        DiskStore s(tmp.path().toStdString(), format_of(1), 1 << 20);
        for (int i = 0; i < 4; ++i) QVERIFY(put(s, c, i));
        const auto path = [&](int i) { return s.dir() / (c.keys[size_t(i)].hex() + ".kvp"); };
        fs::resize_file(path(0), fs::file_size(path(0)) - 100);  // truncated
        {
            std::fstream f(path(1), std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(200);
            char b = 0;
            f.read(&b, 1);
            f.seekp(200);
            b = char(b ^ 0x10);
            f.write(&b, 1);  // one flipped bit in the K/V bytes
        }
        {
            // Another model's page under this model's name for page 2.
            QTemporaryDir other_root;
            DiskStore other(other_root.path().toStdString(), format_of(2), 1 << 20);
            const Chain oc = chain_of(2, 3);
            QVERIFY(put(other, oc, 2));
            fs::copy_file(other.dir() / (oc.keys[2].hex() + ".kvp"), path(2), fs::copy_options::overwrite_existing);
        }
        {
            std::ofstream f(path(3), std::ios::app | std::ios::binary);
            f << "x";  // a byte past the checksum
        }
        DiskStore reopened(tmp.path().toStdString(), format_of(1), 1 << 20);
        for (int i = 0; i < 4; ++i) QVERIFY2(!get_exact(reopened, c, i), qPrintable(QString::number(i)));
        QCOMPARE(reopened.counters().rejected, uint64_t(4));
        QCOMPARE(reopened.pages(), size_t(0));
        QCOMPARE(page_files(reopened.dir()), size_t(0));
        reopened.check_invariants();
        // And the store still works.
        QVERIFY(put(reopened, c, 0));
        QVERIFY(get_exact(reopened, c, 0));
    }

    void budgetRemovesOtherFormatsThenLeastRecentlyUsed() {
        QTemporaryDir tmp;
        const std::string root = tmp.path().toStdString();
        uint64_t file = 0;
        {
            DiskStore old_format(root, DiskFormat{PageKey{1, 7}, 1, kPage, kBytes}, 1 << 20);  // another KV type
            QVERIFY(put(old_format, chain_of(1, 1), 0));
            file = old_format.file_bytes(kPage);
            QVERIFY(old_format.dir() != DiskStore(root, format_of(1), 1 << 20).dir());
        }
        DiskStore s(root, format_of(1), 3 * file);
        QCOMPARE(s.bytes_used(), file);  // the other format's page counts
        const Chain c = chain_of(1, 5);
        // Pauses between uses: file times are coarser than a microsecond.
        auto use = [&](auto&& f) {
            QTest::qSleep(15);
            return f();
        };
        QVERIFY(use([&] { return put(s, c, 0); }));
        QVERIFY(use([&] { return put(s, c, 1); }));
        QCOMPARE(s.bytes_used(), 3 * file);
        QVERIFY(use([&] { return put(s, c, 2); }));  // the other format's file goes first
        QCOMPARE(s.pages(), size_t(3));
        QVERIFY(use([&] { return get_exact(s, c, 0); }));  // page 1 is now the least recently used
        QVERIFY(use([&] { return put(s, c, 3); }));
        QVERIFY(!s.contains(c.keys[1]));
        QVERIFY(s.contains(c.keys[0]) && s.contains(c.keys[2]) && s.contains(c.keys[3]));
        QVERIFY(s.bytes_used() <= s.budget());
        s.check_invariants();

        // The order of use survives a restart (files' modification times): 0, 3, then 2.
        QVERIFY(use([&] { return get_exact(s, c, 2); }));
        DiskStore reopened(root, format_of(1), 3 * file);
        QVERIFY(put(reopened, c, 4));
        QVERIFY(!reopened.contains(c.keys[0]));
        QVERIFY(reopened.contains(c.keys[2]) && reopened.contains(c.keys[3]) && reopened.contains(c.keys[4]));
        reopened.check_invariants();
    }

    void unwritableDirectoryTurnsTheStoreOff() {
        QTemporaryDir tmp;
        const fs::path blocker = fs::path(tmp.path().toStdString()) / "a-file";
        std::ofstream(blocker) << "not a directory";
        // Works as root too (root may write into a read-only directory).
        DiskStore s(blocker / "kv", format_of(1), 1 << 20);
        QVERIFY(!s.enabled());
        QVERIFY2(s.disabled_reason().find("cannot create") != std::string::npos, s.disabled_reason().c_str());
        const Chain c = chain_of(1, 1);
        QVERIFY(!put(s, c, 0));
        QVERIFY(!get_exact(s, c, 0));
        DiskStore tiny(tmp.path().toStdString(), format_of(1), 100);
        QVERIFY(!tiny.enabled());  // a budget that holds no page
    }

    void failingWriteTurnsTheStoreOff() {
        QTemporaryDir tmp;
        DiskStore s(tmp.path().toStdString(), format_of(1), 1 << 20);
        const Chain c = chain_of(1, 2);
        QVERIFY(put(s, c, 0));
        // A file size limit below one page makes the next write fail as a full disk would.
        struct rlimit old {};
        getrlimit(RLIMIT_FSIZE, &old);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = old;
        small.rlim_cur = 1000;
        setrlimit(RLIMIT_FSIZE, &small);
        const bool written = put(s, c, 1);
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        QVERIFY(!written);
        QVERIFY(!s.enabled());
        QVERIFY(!s.disabled_reason().empty());
        for (const auto& e : fs::directory_iterator(s.dir())) QCOMPARE(e.path().extension().string(), std::string(".kvp"));
        s.check_invariants();
        DiskStore reopened(tmp.path().toStdString(), format_of(1), 1 << 20);
        QVERIFY(get_exact(reopened, c, 0));
    }

    void killDuringSpillingLeavesWholePages() {
        QTemporaryDir tmp;
        const std::string root = tmp.path().toStdString();
        const Chain c = chain_of(1, 400);
        // Small budget: the child also deletes old pages for room while it is killed.
        const uint64_t budget = 60 * (kBytes + 200);
        const pid_t child = fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            DiskStore s(root, format_of(1), budget);
            for (int round = 0;; ++round)
                for (int i = 0; i < 400; ++i) put(s, c, i);
        }
        // Kill it once it has written a good number of pages, at no chosen moment.
        const fs::path dir = DiskStore(fs::path(root) / "probe-only", format_of(1), 1).dir().filename();
        const fs::path pages = fs::path(root) / dir;
        for (int i = 0; i < 2000 && (!fs::exists(pages) || page_files(pages) < 40); ++i) QTest::qSleep(2);
        QTest::qSleep(int(getpid() % 7));
        ::kill(child, SIGKILL);
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QVERIFY(WIFSIGNALED(status));

        DiskStore s(root, format_of(1), budget);
        QVERIFY(s.enabled());
        QVERIFY(s.pages() > 0);
        s.check_invariants();
        int readable = 0;
        for (int i = 0; i < 400; ++i) readable += s.contains(c.keys[size_t(i)]) && get_exact(s, c, i);
        QCOMPARE(size_t(readable), s.pages());  // every page found is whole
        QCOMPARE(s.counters().rejected, uint64_t(0));
        for (const auto& e : fs::directory_iterator(s.dir()))
            QVERIFY2(e.path().extension() == ".kvp", e.path().c_str());  // the killed write's temporary is gone
        QVERIFY(put(s, c, 0) || s.contains(c.keys[0]));
    }
};

QTEST_GUILESS_MAIN(TestDiskStore)
#include "test_disk_store.moc"
