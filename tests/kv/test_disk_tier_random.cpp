// Randomized run of the memory and disk tiers together: the real PagePool, RadixCache,
// DiskStore and DiskTier (its writer and loader threads), with page contents in a byte
// array standing for the backend's memory. Requests match in memory, continue on disk,
// load, compute the rest and give their pages to the cache; evictions spill; files are
// truncated, flipped or replaced by another model's; the store is reopened as after a
// restart; the budget is far below the data. After every step the pool, the cache and
// the store's index are checked, and every page a request used (from memory or disk)
// must hold exactly the bytes computed for its key.
#include "disk_test_pages.h"
#include "kv/disk_tier.h"
#include "kv/page_pool.h"
#include "kv/radix_cache.h"

#include <QtTest>

#include <fstream>
#include <random>

using namespace arbor::kv;
using arbor::kv::test::page_bytes_for;
namespace fs = std::filesystem;

namespace {

constexpr int32_t kPage = 4;
constexpr int32_t kPoolPages = 48;
constexpr size_t kBytes = 200;
constexpr int kSteps = 1500;
constexpr uint64_t kNamespace = 5;

class Run {
public:
    Run(uint32_t seed, fs::path root) : rng_(seed), root_(std::move(root)), pool_(kPoolPages), cache_(pool_, kPage) {
        cache_.set_model_key(model_);
        memory_.assign(kPoolPages, std::vector<std::byte>(kBytes));
        cache_.set_spill([this](const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens, int32_t page) {
            ++spilled_;
            tier_->spill(DiskPageRef{key, parent, {tokens.begin(), tokens.end()}}, memory_[size_t(page)]);
        });
        open();
        for (int i = 0; i < 6; ++i) conversations_.push_back(random_tokens(4 + int(rng_() % 40)));
    }

    void step() {
        const uint32_t r = rng_() % 100;
        if (r < 60) request();
        else if (r < 75) cache_.evict(1 + int32_t(rng_() % 20));
        else if (r < 88) corrupt();
        else if (r < 94) restart();
        else conversations_[rng_() % conversations_.size()] = random_tokens(4 + int(rng_() % 40));
        tier_->flush();
        pool_.check_invariants();
        cache_.check_invariants();
        tier_->store().check_invariants();
        if (pool_.used_count() != cache_.cached_pages()) throw std::logic_error("a request leaked pages");
    }

    int loaded_pages() const { return loaded_; }
    int spilled() const { return spilled_; }
    int corruptions() const { return corruptions_; }
    uint64_t rejected() const { return rejected_ + tier_->store().counters().rejected; }

private:
    std::vector<int32_t> random_tokens(int n) {
        std::vector<int32_t> t(static_cast<size_t>(n));
        for (auto& x : t) x = int32_t(rng_() % 3);  // tiny vocabulary: many shared chunks
        return t;
    }

    void open() {
        const uint64_t budget = 30 * (kBytes + 200);
        tier_ = std::make_unique<DiskTier>(std::make_unique<DiskStore>(root_, DiskFormat{model_, 0, kPage, kBytes}, budget),
                                           8 * kBytes, nullptr);
        if (!tier_->store().enabled()) throw std::runtime_error(tier_->store().disabled_reason());
    }

    void restart() {
        cache_.for_each_page([&](const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens, int32_t page) {
            tier_->spill(DiskPageRef{key, parent, {tokens.begin(), tokens.end()}}, memory_[size_t(page)], true);
        });
        tier_->flush();
        rejected_ += tier_->store().counters().rejected;
        tier_.reset();
        cache_.clear();
        open();
    }

    void corrupt() {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(tier_->store().dir()))
            if (e.path().extension() == ".kvp") files.push_back(e.path());
        if (files.empty()) return;
        const fs::path victim = files[rng_() % files.size()];
        ++corruptions_;
        switch (rng_() % 3) {
        case 0: fs::resize_file(victim, fs::file_size(victim) - 1 - rng_() % 100); break;
        case 1: {
            std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
            const auto at = std::streamoff(rng_() % fs::file_size(victim));
            char b = 0;
            f.seekg(at);
            f.read(&b, 1);
            f.seekp(at);
            b = char(b ^ (1 << (rng_() % 8)));
            f.write(&b, 1);
            break;
        }
        default: {
            // Another model's page file put in its place.
            const fs::path other_root = root_.parent_path() / "other-model";
            DiskStore other(other_root, DiskFormat{PageKey{99, 99}, 0, kPage, kBytes}, 1 << 20);
            const std::vector<int32_t> t(kPage, 1);
            other.put(PageKey{1, 2}, PageKey{3, 4}, t, page_bytes_for(PageKey{1, 2}, kBytes));
            fs::copy_file(other.dir() / (PageKey{1, 2}.hex() + ".kvp"), victim, fs::copy_options::overwrite_existing);
        }
        }
    }

    void expect_content(int32_t page, const PageKey& key) const {
        if (memory_[size_t(page)] != page_bytes_for(key, kBytes))
            throw std::logic_error("page " + std::to_string(page) + " does not hold the bytes of its key");
    }

    void request() {
        const auto& tokens = conversations_[rng_() % conversations_.size()];
        const size_t n_pages = tokens.size() / kPage;
        PageKey key;
        std::vector<int32_t> pages = cache_.match(kNamespace, tokens, nullptr, &key);
        // Memory pages hold their keys' bytes.
        PageKey k = cache_.root_key_of(kNamespace);
        std::vector<PageKey> keys;
        for (size_t i = 0; i < n_pages; ++i) {
            k = chain_key(k, std::span(tokens.data() + i * kPage, kPage));
            keys.push_back(k);
        }
        for (size_t i = 0; i < pages.size(); ++i) expect_content(pages[i], keys[i]);
        if (!pages.empty() && !(key == keys[pages.size() - 1])) throw std::logic_error("match reports a wrong last key");

        // Continue on disk.
        std::vector<DiskPageRef> refs;
        for (size_t i = pages.size(); i < n_pages; ++i)
            refs.push_back(DiskPageRef{keys[i], i == 0 ? cache_.root_key_of(kNamespace) : keys[i - 1],
                                       {tokens.begin() + std::ptrdiff_t(i * kPage), tokens.begin() + std::ptrdiff_t((i + 1) * kPage)}});
        const size_t on_disk = tier_->available(refs);
        std::vector<std::vector<std::byte>> read;
        if (on_disk > 0) {
            refs.resize(on_disk);
            tier_->load(++ticket_, refs);
            for (bool done = false; !done;) {
                for (LoadedPage& p : tier_->take_loaded()) {
                    if (p.ok) read.push_back(std::move(p.bytes));
                    done = done || p.last;
                }
                if (!done) QTest::qWait(0);
            }
        }
        // Pages for what was read and what is computed; the cache makes room (spilling).
        auto take_page = [&]() -> int32_t {
            if (auto p = pool_.allocate()) return *p;
            if (cache_.evict(1) > 0) return *pool_.allocate();
            return -1;
        };
        const size_t in_memory = pages.size();
        for (size_t i = in_memory; i < n_pages; ++i) {
            const int32_t page = take_page();
            if (page < 0) break;  // pool full of this request's own pages
            const size_t disk_index = i - in_memory;
            if (disk_index < read.size()) {
                if (read[disk_index] != page_bytes_for(keys[i], kBytes)) throw std::logic_error("a loaded page differs");
                memory_[size_t(page)] = read[disk_index];
                ++loaded_;
            } else {
                memory_[size_t(page)] = page_bytes_for(keys[i], kBytes);  // "computed"
            }
            pages.push_back(page);
        }
        const size_t whole = pages.size();
        cache_.insert(kNamespace, std::span(tokens.data(), whole * kPage), pages);
        for (int32_t p : pages) pool_.release(p);
    }

    std::mt19937 rng_;
    fs::path root_;
    PageKey model_{0x1234, 0x5678};
    PagePool pool_;
    RadixCache cache_;
    std::vector<std::vector<std::byte>> memory_;
    std::unique_ptr<DiskTier> tier_;
    std::vector<std::vector<int32_t>> conversations_;
    uint64_t ticket_ = 0;
    int loaded_ = 0, spilled_ = 0, corruptions_ = 0;
    uint64_t rejected_ = 0;
};

} // namespace

class TestDiskTierRandom : public QObject {
    Q_OBJECT

private slots:
    void tiersStayConsistent_data() {
        QTest::addColumn<uint32_t>("seed");
        for (uint32_t seed : {1u, 2u, 3u}) QTest::newRow(qPrintable(QString("seed %1").arg(seed))) << seed;
    }

    void tiersStayConsistent() {
        QFETCH(uint32_t, seed);
        QTemporaryDir tmp;
        Run run(seed, fs::path(tmp.path().toStdString()) / "kv");
        for (int i = 0; i < kSteps; ++i) {
            try {
                run.step();
            } catch (const std::exception& e) {
                QFAIL(qPrintable(QString("step %1: %2").arg(i).arg(e.what())));
            }
        }
        // The run exercised what it claims to.
        QVERIFY2(run.loaded_pages() > 50, qPrintable(QString::number(run.loaded_pages())));
        QVERIFY(run.spilled() > 50);
        QVERIFY(run.corruptions() > 50);
        QVERIFY2(run.rejected() > 10, qPrintable(QString::number(run.rejected())));
    }
};

QTEST_GUILESS_MAIN(TestDiskTierRandom)
#include "test_disk_tier_random.moc"
