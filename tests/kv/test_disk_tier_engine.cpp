// The disk tier in the engine, on the default model: a page's bytes round-trip through
// the backend and the disk bit for bit (the next token's logits read from restored pages
// equal those from the originals); a restarted engine continues a conversation from disk
// with the same greedy tokens as the engine that never stopped; pages evicted from a
// small pool come back from disk in the same process; while a prompt waits for its pages
// from a slow disk the other requests keep producing tokens; an unusable directory leaves
// the engine working without the tier and says why.
#include "../engine/engine_test_support.h"
#include "test_support.h"

#include "arbor/backend.h"
#include "arbor/engine.h"
#include "arbor/model.h"
#include "kv/disk_store.h"

#include <atomic>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using arbor::test::Collector;
using arbor::test::greedy;
namespace fs = std::filesystem;

namespace {

size_t page_files(const fs::path& root) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
        n += it->path().extension() == ".kvp";
    return n;
}

// A disk that holds every read until released: each page file under root is replaced by
// a FIFO of the same name, and a thread writes a file's bytes into its FIFO once the
// engine's loader opens it and release() was called. The store reads real page files
// through its ordinary code; only their arrival is in the test's hands. Destroy it
// before the engine: it releases whatever the loader still waits for.
class SlowDisk {
public:
    explicit SlowDisk(const fs::path& root) {
        for (const auto& e : fs::recursive_directory_iterator(root)) {
            if (e.path().extension() != ".kvp") continue;
            std::ifstream in(e.path(), std::ios::binary);
            pages_[e.path()] = std::string(std::istreambuf_iterator<char>(in), {});
            in.close();
            fs::remove(e.path());
            if (::mkfifo(e.path().c_str(), 0600) != 0) pages_.erase(e.path());
        }
        server_ = std::thread([this] { serve(); });
    }
    ~SlowDisk() {
        release();
        stop_ = true;
        server_.join();
    }
    size_t files() const { return pages_.size(); }
    // Whether the loader has opened a page file and waits for its bytes.
    bool reader_waiting() const { return waiting_; }
    void release() { released_ = true; }
    size_t served() const { return served_; }

private:
    void serve() {
        std::map<fs::path, bool> done;
        while (!stop_) {
            bool any = false;
            for (const auto& [path, bytes] : pages_) {
                if (done[path]) continue;
                // Opening the write end succeeds only while a reader has the FIFO open.
                const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0) continue;
                any = done[path] = true;
                waiting_ = true;
                while (!released_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                ::fcntl(fd, F_SETFL, 0);
                for (size_t at = 0; at < bytes.size();) {
                    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
                    if (n <= 0) break;
                    at += size_t(n);
                }
                ::close(fd);
                waiting_ = false;
                ++served_;
            }
            if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    std::map<fs::path, std::string> pages_;
    std::atomic<bool> waiting_ = false, released_ = false, stop_ = false;
    std::atomic<size_t> served_ = 0;
    std::thread server_;
};

} // namespace

class TestDiskTierEngine : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;

    std::vector<arbor::TokenId> encode(const std::string& text, bool bos = true) const {
        return model_->tokenizer().encode(text, bos && model_->tokenizer().adds_bos(), false);
    }
    // About 300 tokens of conversation-like text.
    std::vector<arbor::TokenId> long_prompt() const {
        std::string text = "Notes from the reading group.\n";
        for (int i = 0; i < 12; ++i)
            text += "Chapter " + std::to_string(i + 1) +
                    " follows the river from its source in the hills down to the harbour town, where the ferry waits.\n";
        return encode(text);
    }
    arbor::EngineOptions options(const fs::path& dir, int32_t kv_tokens = 4096) const {
        arbor::EngineOptions o;
        o.backend.kv_tokens = kv_tokens;
        o.backend.threads = 2;
        o.kv_disk_bytes = dir.empty() ? 0 : uint64_t(256) << 20;
        o.kv_disk_dir = dir;
        return o;
    }
    static arbor::test::Outcome run(arbor::Engine& engine, arbor::Request r) {
        Collector c;
        const auto id = c.submit(engine, std::move(r));
        if (!c.wait(id)) return {};
        return c.get(id);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        std::signal(SIGPIPE, SIG_IGN);  // a FIFO whose reader gave up fails the write instead
        model_ = arbor::Model::load(arbor::test::model_path());
    }

    void pageBytesRoundTripThroughDiskBitExactly_data() {
        QTest::addColumn<arbor::KvType>("type");
        QTest::newRow("f16") << arbor::KvType::F16;
        QTest::newRow("f32") << arbor::KvType::F32;
    }

    void pageBytesRoundTripThroughDiskBitExactly() {
        QFETCH(arbor::KvType, type);
        arbor::BackendOptions bo;
        bo.kv_tokens = 256;
        bo.threads = 2;
        bo.kv_type = type;
        auto backend = arbor::make_cpu_backend(*model_, bo);
        QVERIFY(backend->page_io_unsupported().empty());
        QCOMPARE(backend->kv_type(), type);
        const int32_t P = backend->page_size();
        auto tokens = long_prompt();
        tokens.resize(size_t(2 * P + 1));
        const int32_t original[] = {0, 1, 2}, restored[] = {5, 6, 7};
        auto step = [&](std::span<const arbor::TokenId> t, int32_t start, std::span<const int32_t> table) {
            arbor::ForwardBatch batch;
            batch.tokens.assign(t.begin(), t.end());
            arbor::SequenceRows rows;
            rows.n_rows = int32_t(t.size());
            rows.start_pos = start;
            rows.block_table = table;
            batch.sequences.push_back(rows);
            std::vector<float> logits;
            backend->forward(batch, logits);
            return logits;
        };
        step(std::span(tokens.data(), size_t(2 * P)), 0, original);

        QTemporaryDir tmp;
        arbor::kv::DiskStore store(tmp.path().toStdString(),
                                   arbor::kv::DiskFormat{{1, 2}, uint32_t(type), uint32_t(P), backend->page_bytes()}, 1 << 30);
        for (int i = 0; i < 2; ++i) {
            std::vector<std::byte> bytes(backend->page_bytes()), back(backend->page_bytes());
            backend->read_page(original[i], bytes);
            const std::span<const int32_t> page_tokens(tokens.data() + i * P, size_t(P));
            QVERIFY(store.put({7, uint64_t(i)}, {}, page_tokens, bytes));
            QVERIFY(store.get({7, uint64_t(i)}, {}, page_tokens, back));
            QVERIFY(back == bytes);
            backend->write_page(restored[i], back);
            std::vector<std::byte> again(backend->page_bytes());
            backend->read_page(restored[i], again);
            QVERIFY(again == bytes);
        }
        const auto from_original = step(std::span(tokens.data() + 2 * P, 1), 2 * P, original);
        const auto from_restored = step(std::span(tokens.data() + 2 * P, 1), 2 * P, restored);
        QCOMPARE(from_restored.size(), from_original.size());
        QVERIFY(std::memcmp(from_restored.data(), from_original.data(), from_original.size() * sizeof(float)) == 0);

        std::vector<std::byte> wrong_size(backend->page_bytes() - 1);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, backend->read_page(0, wrong_size));
        std::vector<std::byte> bytes(backend->page_bytes());
        QVERIFY_THROWS_EXCEPTION(arbor::Error, backend->write_page(backend->page_count(), bytes));
    }

    void restartedEngineContinuesTheConversation() {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "kv";
        const auto prompt = long_prompt();
        std::vector<arbor::TokenId> follow_up;
        arbor::test::Outcome hot;
        {
            arbor::Engine engine(*model_, options(dir));
            QVERIFY2(engine.disk_tier_off_reason().empty(), engine.disk_tier_off_reason().c_str());
            const auto first = run(engine, greedy(prompt, 24));
            QVERIFY(first.finished && first.tokens.size() == 24);
            follow_up = prompt;
            follow_up.insert(follow_up.end(), first.tokens.begin(), first.tokens.end());
            const auto more = encode("\nQuestion: where does the ferry go next?\n", false);
            follow_up.insert(follow_up.end(), more.begin(), more.end());
            hot = run(engine, greedy(follow_up, 24));
            QVERIFY(hot.finished && hot.tokens.size() == 24);
            QCOMPARE(hot.stats.disk_tokens, 0);
            QVERIFY(hot.stats.cached_tokens > int(prompt.size()) - 16);
        }  // shutdown flushes every cached page
        QVERIFY(page_files(dir) >= prompt.size() / 16);

        arbor::Engine restarted(*model_, options(dir));
        const auto restored = run(restarted, greedy(follow_up, 24));
        QVERIFY(restored.finished);
        QCOMPARE(restored.tokens, hot.tokens);
        const int32_t whole = int32_t((follow_up.size() - 1) / 16 * 16);
        QCOMPARE(restored.stats.disk_tokens, whole);  // every whole page that the first engine computed
        QCOMPARE(restored.stats.cached_tokens, whole);
        QVERIFY(restarted.stats().disk_read >= uint64_t(whole / 16));

        // And recomputing from nothing gives the same tokens too.
        arbor::Engine cold(*model_, options({}));
        const auto computed = run(cold, greedy(follow_up, 24));
        QCOMPARE(computed.tokens, hot.tokens);
        QCOMPARE(computed.stats.cached_tokens, 0);
    }

    void pagesEvictedFromMemoryComeBackFromDisk() {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "kv";
        // Room for about one conversation: the others push its pages out of memory.
        arbor::Engine engine(*model_, options(dir, 512));
        const auto prompt = long_prompt();
        const auto first = run(engine, greedy(prompt, 8));
        QVERIFY(first.finished);
        for (const char* other : {"The three primary colors are red, yellow and blue, and when they mix",
                                  "def quicksort(items):\n    if len(items) < 2:\n        return items\n"}) {
            auto p = encode(other);
            while (p.size() < 420) p.insert(p.end(), p.begin() + 1, p.begin() + std::ptrdiff_t(std::min<size_t>(p.size(), 40)));
            QVERIFY(run(engine, greedy(p, 4)).finished);
        }
        for (int i = 0; i < 200 && engine.stats().disk_written == 0; ++i) QTest::qWait(10);
        QVERIFY(engine.stats().disk_written > 0);
        const auto again = run(engine, greedy(prompt, 8));
        QVERIFY(again.finished);
        QCOMPARE(again.tokens, first.tokens);
        QVERIFY2(again.stats.disk_tokens > 0, qPrintable(QString("cached %1").arg(again.stats.cached_tokens)));
    }

    // Scheduling (issue point 3): a request whose prompt continues a conversation on disk
    // waits for its pages beside the steps, not in them. The disk holds the load; another
    // request meanwhile keeps producing tokens; once released, the waiting request gets
    // its pages from disk and the same tokens as the engine that computed them.
    void othersKeepSteppingWhileAPromptWaitsForDisk() {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "kv";
        auto follow_up = long_prompt();
        const auto more = encode("\nQuestion: where does the ferry go next?\n", false);
        follow_up.insert(follow_up.end(), more.begin(), more.end());
        arbor::test::Outcome hot;
        {
            arbor::Engine engine(*model_, options(dir));
            hot = run(engine, greedy(follow_up, 4));
            QVERIFY(hot.finished && hot.tokens.size() == 4);
        }  // shutdown flushes every cached page

        Collector c;  // outlives the engine, which may still send events as it stops
        arbor::Engine restarted(*model_, options(dir));  // its store indexes the page files as it opens
        auto other_request = greedy(encode("A short story about a lighthouse keeper and her cat:"), 400);
        other_request.options.stop_at_end_of_generation = false;
        const auto other = c.submit(restarted, std::move(other_request));
        QVERIFY(c.wait_for_tokens(other, 1));
        SlowDisk disk(dir);  // after the store's scan at start: it indexed real page files
        QVERIFY(disk.files() >= follow_up.size() / 16);
        const auto waiting = c.submit(restarted, greedy(follow_up, 4));
        for (int i = 0; i < 6000 && !disk.reader_waiting(); ++i) QTest::qWait(5);
        QVERIFY2(disk.reader_waiting(), "the engine never read the conversation's first page");

        const int before = int(c.get(other).tokens.size());
        QVERIFY(c.wait_for_tokens(other, before + 8, std::chrono::seconds(60)));
        const int stepped = int(c.get(other).tokens.size()) - before;
        qInfo("while the first page was held, the other request produced %d tokens", stepped);
        QVERIFY2(stepped >= 8 && !c.get(other).finished, qPrintable(QString::number(stepped)));
        QVERIFY(disk.reader_waiting());  // still held: those tokens came while it waited
        QCOMPARE(c.get(waiting).token_events, 0);
        QCOMPARE(disk.served(), size_t(0));

        disk.release();
        QVERIFY(c.wait(waiting));
        const auto restored = c.get(waiting);
        QCOMPARE(restored.tokens, hot.tokens);
        QCOMPARE(restored.stats.disk_tokens, int32_t((follow_up.size() - 1) / 16 * 16));
        QVERIFY(disk.served() >= follow_up.size() / 16);
        restarted.cancel(other);
        QVERIFY(c.wait(other));
    }

    void unusableDirectoryLeavesTheEngineWithoutTheTier() {
        QTemporaryDir tmp;
        const fs::path blocker = fs::path(tmp.path().toStdString()) / "file";
        std::ofstream(blocker) << "x";
        arbor::Engine engine(*model_, options(blocker / "kv"));
        QVERIFY(!engine.disk_tier_off_reason().empty());
        const auto out = run(engine, greedy(encode("The mitochondria is"), 4));
        QVERIFY(out.finished && out.tokens.size() == 4);
    }
};

QTEST_GUILESS_MAIN(TestDiskTierEngine)
#include "test_disk_tier_engine.moc"
