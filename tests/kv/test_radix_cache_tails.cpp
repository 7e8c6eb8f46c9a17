// Tails in the radix cache: partially filled last pages cached at the end of a path and
// served only through PartialPage.
#include "kv/page_pool.h"
#include "kv/radix_cache.h"
#include "radix_test_ids.h"

#include <QtTest>

#include <numeric>
#include <stdexcept>
#include <vector>

namespace arbor::kv {
struct RadixCacheTestAccess {
    static std::vector<int32_t>& root_tail_tokens(RadixCache& c, uint64_t ns, size_t k) {
        return c.roots_.at(ns)->tails.at(k)->tokens;
    }
    static int32_t& cached(RadixCache& c) { return c.cached_; }
};
} // namespace arbor::kv

using arbor::kv::PagePool;
using arbor::kv::PartialPage;
using arbor::kv::RadixCache;
using arbor::kv::RadixCacheTestAccess;

namespace {

using namespace arbor::kv::test;

// Matches with a partial page; releases everything the match retained and returns the
// whole pages and the partial page.
std::pair<Ids, PartialPage> probe(RadixCache& cache, PagePool& pool, uint64_t ns, const Ids& tokens) {
    PartialPage part;
    Ids got = cache.match(ns, tokens, &part);
    Ids copy = got;
    release_all(pool, got);
    if (part.page >= 0) pool.release(part.page);
    return {copy, part};
}

} // namespace

class TestRadixCacheTails : public QObject {
    Q_OBJECT

private slots:
    void tailIsServedOnlyAsPartialPage() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids mine = compute(pool, 3);  // 2 whole pages + 2 tokens
        QCOMPARE(cache.insert(kModelA, run(0, 10), mine, true), 3);
        QCOMPARE(cache.cached_pages(), 3);
        for (const int32_t p : mine) QCOMPARE(pool.refcount(p), 2);
        cache.check_invariants();

        PartialPage part;
        Ids got = cache.match(kModelA, run(0, 12), &part);  // the tail is never a whole page
        QCOMPARE(got, slice(mine, 0, 2));
        QCOMPARE(part.page, mine[2]);
        QCOMPARE(part.tokens, 2);
        QCOMPARE(pool.refcount(mine[2]), 3);  // retained for the caller
        pool.release(part.page);
        release_all(pool, got);
        QCOMPARE(cache.match(kModelA, run(0, 12)), slice(mine, 0, 2));  // without partial as well
        for (const int32_t p : slice(mine, 0, 2)) pool.release(p);

        QCOMPARE(probe(cache, pool, kModelA, run(0, 9)).second.tokens, 1);
        const auto [whole, diverged] = probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 99}));
        QCOMPARE(whole, slice(mine, 0, 2));
        QCOMPARE(diverged.page, mine[2]);
        QCOMPARE(diverged.tokens, 1);
        QCOMPARE(probe(cache, pool, kModelA, cat(run(0, 8), Ids{99})).second.page, -1);
        QCOMPARE(probe(cache, pool, kModelB, run(0, 10)).second.page, -1);

        // A tail of fewer tokens than a page hangs at the root.
        Ids short_pages = compute(pool, 1);
        QCOMPARE(cache.insert(kModelA, run(50, 3), short_pages, true), 1);
        const auto [none, at_root] = probe(cache, pool, kModelA, run(50, 5));
        QVERIFY(none.empty());
        QCOMPARE(at_root.page, short_pages[0]);
        QCOMPARE(at_root.tokens, 3);

        // A full last page is simply a whole page.
        Ids even = compute(pool, 2);
        QCOMPARE(cache.insert(kModelA, run(200, 8), even, true), 2);
        QCOMPARE(probe(cache, pool, kModelA, run(200, 9)).first, even);
        cache.check_invariants();
        for (Ids* held : {&mine, &short_pages, &even}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), cache.cached_pages());
        pool.check_invariants();
    }

    void badTailInsertsThrowAndChangeNothing() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids pages = compute(pool, 3);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.insert(kModelA, run(0, 8), pages, true));  // 2 pages' worth
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.insert(kModelA, run(0, 13), pages, true));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.insert(kModelA, run(0, 1), Ids{}, true));
        QCOMPARE(cache.insert(kModelA, {}, Ids{}, true), 0);
        QCOMPARE(cache.insert(kModelA, run(0, 10), pages, true), 3);
        // The tail page offered again at another place is a caller bug.
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.insert(kModelA, run(70, 4), Ids{pages[2]}));
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.insert(kModelA, run(70, 3), Ids{pages[2]}, true));
        // ... and so is the tail page offered for the page after the one replacing it.
        const int32_t fresh = *pool.allocate();
        QVERIFY_THROWS_EXCEPTION(std::logic_error,
                                 cache.insert(kModelA, run(0, 16), Ids{pages[0], pages[1], fresh, pages[2]}));
        QCOMPARE(cache.cached_pages(), 3);
        QCOMPARE(pool.refcount(pages[2]), 2);
        QCOMPARE(pool.refcount(fresh), 1);
        cache.check_invariants();
        pool.release(fresh);
        release_all(pool, pages);
    }

    void partialPicksTheLongestAmongTailsAndPages() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids whole = compute(pool, 3), tail_a = compute(pool, 3), tail_b = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, cat(run(0, 8), Ids{8, 9, 10, 11}), whole), 3);
        // Siblings: they diverge from the whole page and from each other.
        QCOMPARE(cache.insert(kModelA, cat(run(0, 8), Ids{8, 9, 20}), tail_a, true), 1);
        QCOMPARE(cache.insert(kModelA, cat(run(0, 8), Ids{8, 30}), tail_b, true), 1);
        cache.check_invariants();
        QCOMPARE(cache.cached_pages(), 5);

        auto [w1, p1] = probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 9, 20, 21}));
        QCOMPARE(w1, slice(whole, 0, 2));
        QCOMPARE(p1.page, tail_a[2]);
        QCOMPARE(p1.tokens, 3);
        auto [w2, p2] = probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 9, 10}));
        QCOMPARE(p2.page, whole[2]);
        QCOMPARE(p2.tokens, 3);
        auto [w3, p3] = probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 9, 7}));
        QCOMPARE(p3.tokens, 2);  // either of the two sharing two tokens
        QVERIFY(p3.page == whole[2] || p3.page == tail_a[2]);
        QCOMPARE(probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 30, 1})).second.page, tail_b[2]);

        for (Ids* held : {&whole, &tail_a, &tail_b}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), 5);
        cache.check_invariants();
    }

    void redundantTailsAreNotAdded() {
        PagePool pool(32);
        RadixCache cache(pool, P);
        Ids path = compute(pool, 4), tail = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, run(0, 16), path), 4);  // one edge of four pages
        cache.check_invariants();
        Ids dup = compute(pool, 3);
        // Prefix of a page inside the edge, and of a page at a node's end.
        QCOMPARE(cache.insert(kModelA, run(0, 10), dup, true), 0);
        QCOMPARE(cache.insert(kModelA, run(0, 15), Ids{path[0], path[1], path[2], dup[2]}, true), 0);
        QCOMPARE(pool.refcount(dup[2]), 1);
        QCOMPARE(cache.cached_pages(), 4);

        QCOMPARE(cache.insert(kModelA, cat(run(0, 16), Ids{1, 2, 3}), cat(path, Ids{tail[0]}), true), 1);
        // The same tokens again, or fewer, in another page: the cached tail serves them.
        QCOMPARE(cache.insert(kModelA, cat(run(0, 16), Ids{1, 2, 3}), cat(path, Ids{dup[0]}), true), 0);
        QCOMPARE(cache.insert(kModelA, cat(run(0, 16), Ids{1, 2}), cat(path, Ids{dup[1]}), true), 0);
        QCOMPARE(cache.insert(kModelA, cat(run(0, 16), Ids{1, 2, 3}), cat(path, Ids{tail[0]}), true), 0);  // same page
        for (const int32_t p : dup) QCOMPARE(pool.refcount(p), 1);
        QCOMPARE(pool.refcount(tail[0]), 2);
        QCOMPARE(cache.cached_pages(), 5);
        cache.check_invariants();
        for (Ids* held : {&path, &tail, &dup}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), 5);
    }

    void tailDivergingInsideAnEdgeSplitsIt() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids path = compute(pool, 4), mine = compute(pool, 3);
        cache.insert(kModelA, run(0, 16), path);
        QCOMPARE(cache.insert(kModelA, cat(run(0, 8), Ids{8, 50}), mine, true), 1);
        cache.check_invariants();
        QCOMPARE(probe(cache, pool, kModelA, run(0, 16)).first, path);  // the edge still serves its pages
        const auto [whole, part] = probe(cache, pool, kModelA, cat(run(0, 8), Ids{8, 50, 51}));
        QCOMPARE(whole, slice(path, 0, 2));
        QCOMPARE(part.page, mine[2]);
        QCOMPARE(part.tokens, 2);
        for (Ids* held : {&path, &mine}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), 5);
        cache.check_invariants();
    }

    void fullerPagesReplaceTheTail() {
        PagePool pool(32);
        RadixCache cache(pool, P);
        const Ids prefix = run(0, 4);
        Ids first = compute(pool, 2);
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7}), first, true), 2);
        const int32_t f0 = first[0], t1 = first[1];
        // A reader copying the tail's head keeps the page alive through the replacement.
        PartialPage reader;
        Ids got = cache.match(kModelA, cat(prefix, Ids{7, 8}), &reader);
        QCOMPARE(reader.page, t1);
        release_all(pool, got);

        // A longer tail in another page supersedes it.
        Ids second = compute(pool, 2);
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7, 8}), second, true), 1);
        QCOMPARE(cache.cached_pages(), 2);
        QCOMPARE(pool.refcount(t1), 2);  // the first caller and the reader
        pool.release(reader.page);
        release_all(pool, first);
        QCOMPARE(pool.refcount(t1), 0);
        QCOMPARE(probe(cache, pool, kModelA, cat(prefix, Ids{7, 8, 9})).second.page, second[1]);
        cache.check_invariants();

        // The same page offered again with more tokens stays cached, now fuller.
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7, 8, 9}), second, true), 1);
        QCOMPARE(pool.refcount(second[1]), 2);
        QCOMPARE(cache.cached_pages(), 2);
        QCOMPARE(probe(cache, pool, kModelA, cat(prefix, Ids{7, 8, 9, 0})).second.tokens, 3);
        cache.check_invariants();

        // A diverging whole page is a sibling; an extending one replaces the tail.
        Ids other = compute(pool, 2), full = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7, 5, 5, 5}), other), 1);
        QCOMPARE(cache.cached_pages(), 3);
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7, 8, 9, 10, 1, 1}), full, true), 2);
        QCOMPARE(cache.cached_pages(), 4);  // + full[1] + tail full[2] - tail second[1]
        QCOMPARE(pool.refcount(second[1]), 1);
        const auto [whole, part] = probe(cache, pool, kModelA, cat(prefix, Ids{7, 8, 9, 10, 1, 1, 1}));
        QCOMPARE(whole, (Ids{f0, full[1]}));
        QCOMPARE(part.page, full[2]);
        QCOMPARE(part.tokens, 2);
        cache.check_invariants();

        // The same page, now whole, takes its own tail's place.
        QCOMPARE(cache.insert(kModelA, cat(prefix, Ids{7, 8, 9, 10, 1, 1, 1, 1}), full), 1);
        QCOMPARE(pool.refcount(full[2]), 2);
        QCOMPARE(cache.cached_pages(), 4);
        QCOMPARE(probe(cache, pool, kModelA, cat(prefix, Ids{7, 8, 9, 10, 1, 1, 1, 1})).first.size(), size_t(3));
        cache.check_invariants();
        for (Ids* held : {&second, &other, &full}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), 4);
        pool.check_invariants();
    }

    void tailsEvictLikeLeaves() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids a = compute(pool, 3), b = compute(pool, 1);
        const Ids ka = a, kb = b;
        cache.insert(kModelA, run(0, 10), a, true);  // node [a0 a1] with the tail a2
        cache.insert(kModelA, run(100, 4), b);       // newer
        for (Ids* held : {&a, &b}) release_all(pool, *held);
        QCOMPARE(cache.evictable_pages(), 4);

        // A reader holding the tail blocks it and the pages above it.
        PartialPage reader;
        Ids got = cache.match(kModelA, run(0, 9), &reader);
        release_all(pool, got);
        QCOMPARE(reader.page, ka[2]);
        QCOMPARE(cache.evictable_pages(), 1);
        QCOMPARE(cache.evict(10), 1);
        QCOMPARE(pool.refcount(kb[0]), 0);
        QCOMPARE(cache.cached_pages(), 3);
        pool.release(reader.page);
        QCOMPARE(cache.evictable_pages(), 3);
        cache.check_invariants();

        QCOMPARE(cache.evict(1), 1);  // the tail, a leaf below its parent, goes first
        QCOMPARE(pool.refcount(ka[2]), 0);
        QCOMPARE(pool.refcount(ka[1]), 1);
        cache.check_invariants();
        QCOMPARE(cache.evict(10), 2);  // then the parent, now a leaf
        QCOMPARE(pool.free_count(), 16);
        cache.check_invariants();

        // LRU across tails and leaves: the older tail goes before a newer whole leaf.
        Ids t = compute(pool, 1), w = compute(pool, 1);
        const Ids kt = t, kw = w;
        cache.insert(kModelA, run(300, 2), t, true);
        cache.insert(kModelA, run(400, 4), w);
        for (Ids* held : {&t, &w}) release_all(pool, *held);
        QCOMPARE(cache.evict(1), 1);
        QCOMPARE(pool.refcount(kt[0]), 0);
        QCOMPARE(pool.refcount(kw[0]), 1);
        cache.check_invariants();
    }

    void clearReleasesTails() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids kept = compute(pool, 2), dropped = compute(pool, 1);
        cache.insert(kModelA, run(0, 6), kept, true);
        cache.insert(kModelB, run(0, 2), dropped, true);
        release_all(pool, dropped);
        QCOMPARE(cache.cached_pages(), 3);
        cache.clear();
        QCOMPARE(cache.cached_pages(), 0);
        QCOMPARE(cache.evictable_pages(), 0);
        QCOMPARE(pool.used_count(), 2);
        QCOMPARE(probe(cache, pool, kModelA, run(0, 6)).second.page, -1);
        cache.check_invariants();
        QCOMPARE(cache.insert(kModelA, run(0, 6), kept, true), 2);
        cache.check_invariants();
        release_all(pool, kept);
        cache.clear();
        QCOMPARE(pool.free_count(), 16);
    }

    void checkerCatchesTailCorruption() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids whole = compute(pool, 1), tail = compute(pool, 1);
        cache.insert(kModelA, run(0, 4), whole);
        cache.insert(kModelA, Ids{0, 9}, tail, true);  // a root tail beside the whole page
        cache.check_invariants();
        auto& tokens = RadixCacheTestAccess::root_tail_tokens(cache, kModelA, 0);
        tokens[1] = 1;  // now a prefix of the whole page
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        tokens = run(0, 4);  // a full page is no tail
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        tokens = Ids{0, 9};
        cache.check_invariants();
        RadixCacheTestAccess::cached(cache) -= 1;  // tails count among cached pages
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        RadixCacheTestAccess::cached(cache) += 1;
        cache.check_invariants();
        for (Ids* held : {&whole, &tail}) release_all(pool, *held);
    }
};

QTEST_APPLESS_MAIN(TestRadixCacheTails)
#include "test_radix_cache_tails.moc"
