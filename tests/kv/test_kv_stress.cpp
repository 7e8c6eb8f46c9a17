// Randomized simulation of a scheduler's use of the pool and the radix cache, checked
// after every step against an independent ownership model (kv_ownership_model.h).
// Requests that finish, are cancelled or are preempted offer their partly filled last
// page as a tail; later requests copy heads of tails and pages through PartialPage.
#include "kv/block_table.h"
#include "kv/page_pool.h"
#include "kv/radix_cache.h"
#include "kv_ownership_model.h"

#include <QtTest>

#include <algorithm>
#include <exception>
#include <random>
#include <span>
#include <string>
#include <vector>

using arbor::kv::BlockTable;
using arbor::kv::PagePool;
using arbor::kv::RadixCache;
using arbor::kv::test::OwnershipModel;
using Ids = std::vector<int32_t>;

namespace {

constexpr int32_t kPageSize = 4;
constexpr int32_t kCapacity = 88;
constexpr int32_t kMaxTokens = 100;  // 25 pages: several requests together overflow the pool
constexpr size_t kMaxActive = 8;
constexpr int kRequests = 6000;
constexpr int32_t kVocab = 40;  // small, so equal chunks under different prefixes are common

struct Request {
    int64_t id = 0;
    uint64_t ns = 0;
    Ids tokens;  // prompt, then generated tokens
    size_t target = 0;  // length at which it finishes
    Ids pages;  // block table: references this request holds
    int32_t copy_src = -1;  // cached page whose head it copies, held until its next step
    bool running = false;
};

struct Conversation {
    uint64_t ns;
    Ids tokens;
};

struct Stats {
    int finished = 0, cancelled = 0, preempted = 0, evicted = 0, clears = 0;
    long matched_pages = 0, newly_cached = 0, partial_pages = 0;
    long tail_offers = 0, tail_partials = 0;  // offers with a tail; partial pages that were tails
    int32_t tails_replaced = 0, tails_refilled = 0;
};

class Simulation {
public:
    explicit Simulation(uint32_t seed)
        : rng_(seed), pool_(kCapacity), cache_(pool_, kPageSize), model_(kCapacity, kPageSize) {
        for (int i = 0; i < 4; ++i) system_prompts_.push_back(random_tokens(6 + int32_t(rng_() % 25)));
    }

    void run() {
        int admitted = 0;
        for (long iteration = 1;; ++iteration) {
            if (admitted >= kRequests && active_.empty()) break;
            if (admitted < kRequests && (active_.empty() || (active_.size() < kMaxActive && chance(0.3)))) {
                admit();
                ++admitted;
            } else if (admitted < kRequests) {
                step(active_[rng_() % active_.size()]);
            } else {
                drain();
            }
            if (chance(0.02)) pressure();
            if (iteration % 4000 == 0) clear_cache();  // with requests holding pages
            check();
            active_.erase(std::remove_if(active_.begin(), active_.end(), [](const Request& r) { return r.id < 0; }),
                          active_.end());
        }
        clear_cache();
        check();
        if (pool_.free_count() != pool_.capacity()) throw std::runtime_error("pages left in use at the end");
        stats_.tails_replaced = model_.tails_replaced();
        stats_.tails_refilled = model_.tails_refilled();
    }

    const Stats& stats() const { return stats_; }

private:
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    int32_t uniform(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng_); }
    Ids random_tokens(int32_t n) {
        Ids t(static_cast<size_t>(n));
        for (auto& x : t) x = uniform(0, kVocab - 1);
        return t;
    }

    // A new prompt: a fresh conversation, a follow-up turn, or an edit/regenerate fork.
    void admit() {
        Request r;
        r.id = next_id_++;
        r.ns = uint64_t(uniform(1, 2));
        const double kind = std::uniform_real_distribution<double>(0, 1)(rng_);
        if (!conversations_.empty() && kind < 0.7) {
            // Half the follow-ups continue one of the latest conversations, as a chat does.
            const size_t pick = chance(0.5) ? conversations_.size() - 1 - std::min<size_t>(rng_() % 4, conversations_.size() - 1)
                                            : rng_() % conversations_.size();
            const Conversation& c = conversations_[pick];
            r.ns = c.ns;
            const size_t cut = kind < 0.5 ? c.tokens.size() : size_t(uniform(1, int32_t(c.tokens.size())));
            r.tokens.assign(c.tokens.begin(), c.tokens.begin() + std::ptrdiff_t(cut));
        } else {
            r.tokens = system_prompts_[rng_() % system_prompts_.size()];
        }
        const Ids user = random_tokens(uniform(1, 12));
        r.tokens.insert(r.tokens.end(), user.begin(), user.end());
        r.target = r.tokens.size() + size_t(uniform(1, 16));
        if (r.target > size_t(kMaxTokens)) {  // too long: start over from a system prompt
            r.tokens = system_prompts_[rng_() % system_prompts_.size()];
            r.tokens.insert(r.tokens.end(), user.begin(), user.end());
            r.target = r.tokens.size() + size_t(uniform(1, 16));
        }
        active_.push_back(std::move(r));
    }

    void step(Request& r) {
        if (chance(0.04)) {
            leave(r);
            r.id = -1;
            ++stats_.cancelled;
        } else if (!r.running) {
            start(r);
        } else {
            decode(r);
        }
    }

    // match -> allocate the rest of the prompt -> insert its whole pages.
    void start(Request& r) {
        const Ids expected = model_.expected_match(r.ns, r.tokens);
        arbor::kv::PartialPage partial;
        r.pages = cache_.match(r.ns, r.tokens, &partial);
        if (r.pages != expected)
            throw std::runtime_error("match returned " + std::to_string(r.pages.size()) + " pages, expected " +
                                     std::to_string(expected.size()) + " (or other ids)");
        for (const int32_t p : r.pages) model_.add(p, r.id);
        stats_.matched_pages += long(r.pages.size());
        const auto rest = std::span<const int32_t>(r.tokens).subspan(r.pages.size() * size_t(kPageSize));
        const int32_t shared = model_.expected_partial(r.ns, r.pages, rest, partial.page);
        if (partial.tokens != shared || (shared > 0) != (partial.page >= 0))
            throw std::runtime_error("partial match of " + std::to_string(partial.tokens) + " tokens, expected " +
                                     std::to_string(shared));
        if (partial.page >= 0) {
            model_.add(partial.page, r.id);
            r.copy_src = partial.page;
            ++stats_.partial_pages;
            stats_.tail_partials += model_.is_tail(partial.page);
        }
        if (!grow(r, r.tokens.size())) return;
        offer(r, false);
        r.running = true;
    }

    void decode(Request& r) {
        drop_copy_source(r);
        const size_t n = std::min(r.target, r.tokens.size() + size_t(uniform(1, 6)));
        if (!grow(r, n)) return;
        const Ids more = random_tokens(int32_t(n - r.tokens.size()));
        r.tokens.insert(r.tokens.end(), more.begin(), more.end());
        if (r.tokens.size() >= r.target) {
            conversations_.push_back({r.ns, r.tokens});
            if (conversations_.size() > 64) conversations_.erase(conversations_.begin() + std::ptrdiff_t(rng_() % 64));
            leave(r);
            r.id = -1;
            ++stats_.finished;
        } else if (chance(0.5)) {
            // Now and then a tail mid-run, so that the same page comes back fuller later.
            offer(r, chance(0.1));
        }
    }

    // Pages for n tokens: evict when short; if still short, preempt r (release all, retry later).
    bool grow(Request& r, size_t n_tokens) {
        const int32_t need = BlockTable::pages_for(int32_t(n_tokens), kPageSize) - int32_t(r.pages.size());
        if (need <= 0) return true;
        if (pool_.free_count() < need) evict(need - pool_.free_count());
        if (pool_.free_count() < need) {
            leave(r);
            ++stats_.preempted;
            return false;
        }
        for (int32_t i = 0; i < need; ++i) {
            const auto page = pool_.allocate();
            if (!page) throw std::runtime_error("allocate failed with free pages left");
            model_.add(*page, r.id);
            r.pages.push_back(*page);
        }
        return true;
    }

    // Offers the computed tokens: whole pages only, or with the partly filled last page.
    void offer(Request& r, bool with_tail) {
        const size_t n = with_tail ? size_t(BlockTable::pages_for(int32_t(r.tokens.size()), kPageSize))
                                   : r.tokens.size() / size_t(kPageSize);
        const std::span<const int32_t> pages(r.pages.data(), n);
        const int32_t expected = model_.apply_insert(r.ns, r.tokens, pages, with_tail);
        const int32_t got = cache_.insert(r.ns, r.tokens, pages, with_tail);
        if (got != expected)
            throw std::runtime_error("insert cached " + std::to_string(got) + " pages, expected " +
                                     std::to_string(expected));
        stats_.newly_cached += got;
        stats_.tail_offers += with_tail && r.tokens.size() % size_t(kPageSize) != 0;
    }

    // Finished, cancelled or preempted: a running request offers everything it computed.
    void leave(Request& r) {
        if (r.running) offer(r, true);
        release_all(r);
    }

    void drop_copy_source(Request& r) {
        if (r.copy_src < 0) return;
        pool_.release(r.copy_src);
        model_.remove(r.copy_src, r.id);
        r.copy_src = -1;
    }

    void release_all(Request& r) {
        drop_copy_source(r);
        for (const int32_t p : r.pages) {
            pool_.release(p);
            model_.remove(p, r.id);
        }
        r.pages.clear();
        r.running = false;
    }

    void evict(int32_t n) {
        const int32_t freed = cache_.evict(n);
        if (freed > n) throw std::runtime_error("evict freed more than asked");
        model_.apply_evictions(pool_, freed);
        stats_.evicted += freed;
    }

    void pressure() { evict(uniform(1, 20)); }

    void clear_cache() {
        cache_.clear();
        model_.apply_clear();
        ++stats_.clears;
    }

    // At the end: preempt everyone, then run each request alone to completion, where it
    // always fits (everything else in the pool is evictable).
    void drain() {
        for (Request& r : active_) leave(r);
        for (Request& r : active_) {
            while (r.id >= 0) {
                const bool was_running = r.running;
                if (!was_running) start(r);
                else decode(r);
                if (!was_running && !r.running) throw std::runtime_error("a lone request did not fit the pool");
                check();
            }
        }
    }

    void check() {
        pool_.check_invariants();
        cache_.check_invariants();
        model_.check(pool_, cache_);
    }

    std::mt19937 rng_;
    PagePool pool_;
    RadixCache cache_;
    OwnershipModel model_;
    std::vector<Ids> system_prompts_;
    std::vector<Conversation> conversations_;
    std::vector<Request> active_;
    int64_t next_id_ = 0;
    Stats stats_;
};

} // namespace

class TestKvStress : public QObject {
    Q_OBJECT

private slots:
    void randomizedRequests() {
        Simulation sim(20240611u);
        try {
            sim.run();
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
        const Stats& s = sim.stats();
        qInfo("finished %d, cancelled %d, preempted %d, evicted %d pages, clears %d, matched %ld pages (%ld partial, "
              "%ld of them tails), cached %ld, tail offers %ld, tails replaced %d (%d by their own page)",
              s.finished, s.cancelled, s.preempted, s.evicted, s.clears, s.matched_pages, s.partial_pages,
              s.tail_partials, s.newly_cached, s.tail_offers, s.tails_replaced, s.tails_refilled);
        // The run must have exercised every path it is meant to check.
        QCOMPARE(s.finished + s.cancelled, kRequests);
        QVERIFY(s.cancelled > 300);
        QVERIFY(s.preempted > 20);
        QVERIFY(s.evicted > 10000);
        QVERIFY(s.matched_pages > 10000);
        QVERIFY(s.clears >= 5);
        QVERIFY(s.partial_pages > 1000);
        QVERIFY(s.tail_offers > 3000);
        QVERIFY(s.tail_partials > 300);
        QVERIFY(s.tails_replaced > 400);
        QVERIFY(s.tails_refilled > 100);
    }
};

QTEST_APPLESS_MAIN(TestKvStress)
#include "test_kv_stress.moc"
