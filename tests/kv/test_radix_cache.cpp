#include "kv/page_pool.h"
#include "kv/radix_cache.h"
#include "radix_test_ids.h"

#include "arbor/error.h"

#include <QtTest>

#include <numeric>
#include <stdexcept>
#include <vector>

namespace arbor::kv {
struct RadixCacheTestAccess {
    static int32_t& cached(RadixCache& c) { return c.cached_; }
    // The first child of namespace ns's root.
    static std::vector<int32_t>& first_tokens(RadixCache& c, uint64_t ns) {
        return c.roots_.at(ns)->children.begin()->second->tokens;
    }
    static uint64_t& first_tick(RadixCache& c, uint64_t ns) { return c.roots_.at(ns)->children.begin()->second->tick; }
};
} // namespace arbor::kv

using arbor::kv::PagePool;
using arbor::kv::RadixCacheTestAccess;
using arbor::kv::RadixCache;

namespace {

using namespace arbor::kv::test;

} // namespace

class TestRadixCache : public QObject {
    Q_OBJECT

private slots:
    void insertThenMatch() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids tokens = run(100, 12);
        Ids mine = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, tokens, mine), 3);
        QCOMPARE(cache.cached_pages(), 3);
        for (const int32_t p : mine) QCOMPARE(pool.refcount(p), 2);
        cache.check_invariants();

        Ids full = cache.match(kModelA, tokens);
        QCOMPARE(full, mine);
        for (const int32_t p : mine) QCOMPARE(pool.refcount(p), 3);  // retained for the caller
        Ids longer = cache.match(kModelA, cat(tokens, run(7, 6)));
        QCOMPARE(longer, mine);
        Ids partial = cache.match(kModelA, run(100, 10));  // 2.5 pages: whole pages only
        QCOMPARE(partial, slice(mine, 0, 2));
        Ids inside = cache.match(kModelA, cat(run(100, 6), run(900, 6)));  // differs inside page 2
        QCOMPARE(inside, slice(mine, 0, 1));
        QVERIFY(cache.match(kModelA, run(100, 3)).empty());  // shorter than one page
        QVERIFY(cache.match(kModelA, {}).empty());
        QVERIFY(cache.match(kModelA, run(101, 12)).empty());  // first page differs
        QCOMPARE(pool.refcount(mine[0]), 2 + 4);
        for (Ids* held : {&full, &longer, &partial, &inside}) release_all(pool, *held);
        for (const int32_t p : mine) QCOMPARE(pool.refcount(p), 2);
        cache.check_invariants();
        pool.check_invariants();
    }

    void divergenceSplitsAnEdge() {
        PagePool pool(32);
        RadixCache cache(pool, P);
        const Ids a = run(0, 16);  // 4 pages
        const Ids b = cat(run(0, 8), run(500, 8));  // shares pages 0-1, diverges at a boundary
        const Ids c = cat(run(0, 10), run(700, 6));  // diverges inside page 2
        Ids pa = compute(pool, 4), pb = compute(pool, 4), pc = compute(pool, 4);
        QCOMPARE(cache.insert(kModelA, a, pa), 4);
        QCOMPARE(cache.insert(kModelA, b, pb), 2);
        cache.check_invariants();
        QCOMPARE(cache.insert(kModelA, c, pc), 2);
        cache.check_invariants();
        QCOMPARE(cache.cached_pages(), 8);
        QCOMPARE(pool.refcount(pb[0]), 1);  // duplicates of the cached prefix stay the caller's
        QCOMPARE(pool.refcount(pc[1]), 1);
        QCOMPARE(pool.refcount(pc[2]), 2);

        Ids ma = cache.match(kModelA, a), mb = cache.match(kModelA, b), mc = cache.match(kModelA, c);
        QCOMPARE(ma, pa);
        QCOMPARE(mb, cat(slice(pa, 0, 2), slice(pb, 2, 2)));
        QCOMPARE(mc, cat(slice(pa, 0, 2), slice(pc, 2, 2)));
        // A sequence ending inside an edge adds nothing and leaves it whole.
        Ids pd = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, run(0, 12), pd), 0);
        QCOMPARE(cache.match(kModelA, run(0, 12)), slice(pa, 0, 3));
        cache.check_invariants();
        for (const int32_t p : slice(pa, 0, 3)) pool.release(p);
        for (Ids* held : {&ma, &mb, &mc, &pa, &pb, &pc, &pd}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), 8);
        cache.check_invariants();
    }

    void partialPageMatch() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids mine = compute(pool, 3);
        cache.insert(kModelA, run(0, 12), mine);
        arbor::kv::PartialPage part;

        Ids got = cache.match(kModelA, run(0, 6), &part);  // 1 page + 2 tokens of the next
        QCOMPARE(got, slice(mine, 0, 1));
        QCOMPARE(part.page, mine[1]);
        QCOMPARE(part.tokens, 2);
        QCOMPARE(pool.refcount(mine[1]), 3);  // retained for the caller as well
        pool.release(part.page);
        release_all(pool, got);

        got = cache.match(kModelA, run(0, 3), &part);  // shorter than a page
        QVERIFY(got.empty());
        QCOMPARE(part.page, mine[0]);
        QCOMPARE(part.tokens, 3);
        pool.release(part.page);

        got = cache.match(kModelA, cat(run(0, 9), Ids{99, 99, 99}), &part);  // diverges inside page 2
        QCOMPARE(got, slice(mine, 0, 2));
        QCOMPARE(part.page, mine[2]);
        QCOMPARE(part.tokens, 1);
        pool.release(part.page);
        release_all(pool, got);

        got = cache.match(kModelA, cat(run(0, 12), run(12, 3)), &part);  // nothing cached after
        QCOMPARE(got, mine);
        QCOMPARE(part.page, -1);
        QCOMPARE(part.tokens, 0);
        release_all(pool, got);
        got = cache.match(kModelA, run(1, 3), &part);  // no token in common
        QCOMPARE(part.page, -1);

        // At a node's end, the child sharing the most tokens wins.
        Ids a = compute(pool, 2), b = compute(pool, 2);
        cache.insert(kModelA, cat(run(100, 4), Ids{10, 11, 12, 13}), a);
        cache.insert(kModelA, cat(run(100, 4), Ids{10, 20, 21, 22}), b);
        got = cache.match(kModelA, cat(run(100, 4), Ids{10, 11, 12}), &part);
        QCOMPARE(got, slice(a, 0, 1));
        QCOMPARE(part.page, a[1]);
        QCOMPARE(part.tokens, 3);
        pool.release(part.page);
        release_all(pool, got);
        got = cache.match(kModelA, cat(run(100, 4), Ids{10, 20, 7, 7, 7}), &part);
        QCOMPARE(part.page, b[1]);
        QCOMPARE(part.tokens, 2);
        pool.release(part.page);
        release_all(pool, got);
        QCOMPARE(pool.refcount(a[1]), 2);
        QCOMPARE(pool.refcount(b[1]), 2);
        cache.check_invariants();
        for (Ids* held : {&mine, &a, &b}) release_all(pool, *held);
        QCOMPARE(pool.used_count(), cache.cached_pages());
    }

    void duplicateInsertKeepsFirstPage() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids t = run(40, 8);
        Ids first = compute(pool, 2), second = compute(pool, 2);
        QCOMPARE(cache.insert(kModelA, t, first), 2);
        QCOMPARE(cache.insert(kModelA, t, second), 0);
        QCOMPARE(cache.cached_pages(), 2);
        for (const int32_t p : second) QCOMPARE(pool.refcount(p), 1);
        Ids got = cache.match(kModelA, t);
        QCOMPARE(got, first);
        // One more page behind the duplicate prefix: only that page is new.
        Ids third = compute(pool, 3);
        QCOMPARE(cache.insert(kModelA, cat(t, run(90, 4)), third), 1);
        QCOMPARE(pool.refcount(third[2]), 2);
        QCOMPARE(pool.refcount(third[0]), 1);
        cache.check_invariants();
        for (Ids* held : {&first, &second, &third, &got}) release_all(pool, *held);
    }

    void namespacesAreIsolated() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids t = run(1, 8);
        Ids pa = compute(pool, 2), pb = compute(pool, 2);
        QCOMPARE(cache.insert(kModelA, t, pa), 2);
        QVERIFY(cache.match(kModelB, t).empty());
        QCOMPARE(cache.insert(kModelB, t, pb), 2);  // same tokens, other model: cached apart
        QCOMPARE(cache.cached_pages(), 4);
        Ids ma = cache.match(kModelA, t), mb = cache.match(kModelB, t);
        QCOMPARE(ma, pa);
        QCOMPARE(mb, pb);
        cache.check_invariants();
        for (Ids* held : {&pa, &pb, &ma, &mb}) release_all(pool, *held);
    }

    void evictsLeastRecentlyUsedLeavesFirst() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids a = run(0, 8), b = run(100, 8), c = run(200, 8);
        Ids pa = compute(pool, 2), pb = compute(pool, 2), pc = compute(pool, 2);
        const Ids ka = pa, kb = pb, kc = pc;
        cache.insert(kModelA, a, pa);
        cache.insert(kModelA, b, pb);
        cache.insert(kModelB, c, pc);
        for (Ids* held : {&pa, &pb, &pc}) release_all(pool, *held);
        Ids touched = cache.match(kModelA, a);  // a becomes the newest; b is now the oldest
        release_all(pool, touched);
        QCOMPARE(cache.evictable_pages(), 6);

        QCOMPARE(cache.evict(1), 1);
        QCOMPARE(pool.refcount(kb[1]), 0);  // the tail of the oldest leaf goes first
        QCOMPARE(pool.refcount(kb[0]), 1);
        QCOMPARE(cache.evict(1), 1);
        QCOMPARE(pool.refcount(kb[0]), 0);
        cache.check_invariants();
        QCOMPARE(cache.evict(2), 2);  // then c, across namespaces
        QCOMPARE(pool.refcount(kc[0]), 0);
        QCOMPARE(pool.refcount(ka[0]), 1);
        QCOMPARE(pool.refcount(ka[1]), 1);
        QVERIFY(cache.match(kModelA, b).empty());
        QCOMPARE(cache.evict(10), 2);
        QCOMPARE(cache.cached_pages(), 0);
        QCOMPARE(pool.free_count(), 16);
        QCOMPARE(cache.evict(1), 0);
        cache.check_invariants();
    }

    void evictsParentsOnlyAfterChildren() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids shared = run(0, 4);
        const Ids x = cat(shared, run(10, 8)), y = cat(shared, run(20, 4));
        Ids px = compute(pool, 3), py = compute(pool, 2);
        const Ids kx = px, ky = py;
        cache.insert(kModelA, x, px);  // one edge, then split by y
        cache.insert(kModelA, y, py);
        release_all(pool, px);
        release_all(pool, py);
        Ids touched = cache.match(kModelA, x);  // the shared page and x are newer than y
        release_all(pool, touched);
        cache.check_invariants();

        QCOMPARE(cache.evict(1), 1);
        QCOMPARE(pool.refcount(ky[1]), 0);  // y's own page: the oldest leaf
        // The shared page is used as recently as x but is x's parent: x's pages go first.
        QCOMPARE(cache.evict(2), 2);
        QCOMPARE(pool.refcount(kx[2]), 0);
        QCOMPARE(pool.refcount(kx[1]), 0);
        QCOMPARE(pool.refcount(kx[0]), 1);
        QCOMPARE(cache.match(kModelA, x), slice(kx, 0, 1));
        pool.release(kx[0]);
        QCOMPARE(cache.evict(5), 1);
        QCOMPARE(pool.free_count(), 16);
        cache.check_invariants();
    }

    void parentOlderThanAnotherLeafGoesBeforeIt() {
        // After its last child goes, a parent may be older than the leaf the walk would
        // visit next; the same evict call must take the parent first.
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids parent = run(0, 4);
        Ids p1 = compute(pool, 2), p2 = compute(pool, 2), p3 = compute(pool, 1);
        const Ids k1 = p1, k2 = p2, k3 = p3;
        cache.insert(kModelA, cat(parent, run(10, 4)), p1);
        cache.insert(kModelA, cat(parent, run(20, 4)), p2);  // splits: parent page used now
        cache.insert(kModelA, run(30, 4), p3);  // a newer, unrelated leaf
        for (Ids* held : {&p1, &p2, &p3}) release_all(pool, *held);
        QCOMPARE(cache.evict(3), 3);
        QCOMPARE(pool.refcount(k1[1]), 0);
        QCOMPARE(pool.refcount(k2[1]), 0);
        QCOMPARE(pool.refcount(k1[0]), 0);  // the parent, older than k3's leaf
        QCOMPARE(pool.refcount(k3[0]), 1);
        cache.check_invariants();
    }

    void evictionWithinOneCallReachesNewParents() {
        // A chain of nodes split at every page, all used at once: one call must free the
        // whole chain deepest first, not stop when the first leaf is gone.
        PagePool pool(32);
        RadixCache cache(pool, P);
        const Ids main = run(0, 24);
        Ids pm = compute(pool, 6);
        const Ids km = pm;
        cache.insert(kModelA, main, pm);
        Ids side;
        for (int32_t k = 1; k < 6; ++k) {
            Ids pages = compute(pool, k + 1);
            cache.insert(kModelA, cat(run(0, 4 * k), run(1000 * k, 4)), pages);
            side = cat(side, pages);
        }
        release_all(pool, pm);
        release_all(pool, side);
        Ids touched = cache.match(kModelA, main);
        release_all(pool, touched);
        cache.check_invariants();
        QCOMPARE(cache.cached_pages(), 11);
        QCOMPARE(cache.evict(5), 5);  // the five side leaves are older than the main path
        for (int i = 0; i < 6; ++i) QCOMPARE(pool.refcount(km[size_t(i)]), 1);
        QCOMPARE(cache.evict(4), 4);
        QCOMPARE(pool.refcount(km[0]), 1);
        QCOMPARE(pool.refcount(km[1]), 1);
        QCOMPARE(pool.refcount(km[2]), 0);
        QCOMPARE(cache.evict(100), 2);
        QCOMPARE(pool.free_count(), 32);
        cache.check_invariants();
    }

    void evictionNeverFreesRetainedPages() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids held_tokens = run(0, 8), loose_tokens = run(50, 8), long_tokens = run(300, 12);
        Ids held = compute(pool, 2), loose = compute(pool, 2), longer = compute(pool, 3);
        const Ids kl = longer;
        cache.insert(kModelA, held_tokens, held);  // the caller keeps `held`
        cache.insert(kModelA, loose_tokens, loose);
        cache.insert(kModelA, long_tokens, longer);
        release_all(pool, loose);
        release_all(pool, longer);
        Ids prefix = cache.match(kModelA, run(300, 5));  // holds the first page of `longer`
        QCOMPARE(prefix, slice(kl, 0, 1));
        QCOMPARE(cache.evictable_pages(), 4);

        QCOMPARE(cache.evict(100), 4);
        QCOMPARE(cache.cached_pages(), 3);
        for (const int32_t p : held) QCOMPARE(pool.refcount(p), 2);
        QCOMPARE(pool.refcount(kl[0]), 2);
        QCOMPARE(cache.evictable_pages(), 0);
        QCOMPARE(cache.evict(100), 0);
        cache.check_invariants();

        release_all(pool, held);
        release_all(pool, prefix);
        QCOMPARE(cache.evictable_pages(), 3);
        QCOMPARE(cache.evict(100), 3);
        QCOMPARE(pool.free_count(), 16);
    }

    void pageBelowAHeldDuplicateIsNotEvictable() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        const Ids t = run(0, 12);
        Ids first = compute(pool, 2), second = compute(pool, 3);
        cache.insert(kModelA, t, first);
        QCOMPARE(cache.insert(kModelA, t, second), 1);  // second[2] now cached below first's pages
        release_all(pool, first);
        // first's pages are referenced only by the cache, but sit above second[2], which
        // its caller still holds: evict cannot reach them.
        QCOMPARE(cache.evictable_pages(), 0);
        QCOMPARE(cache.evict(5), 0);
        QCOMPARE(cache.cached_pages(), 3);
        release_all(pool, second);
        QCOMPARE(cache.evictable_pages(), 3);
        QCOMPARE(cache.evict(5), 3);
        QCOMPARE(pool.free_count(), 16);
        cache.check_invariants();
    }

    void clearReleasesCacheReferences() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids kept = compute(pool, 2), dropped = compute(pool, 3);
        cache.insert(kModelA, run(0, 8), kept);
        cache.insert(kModelB, run(100, 12), dropped);
        release_all(pool, dropped);
        QCOMPARE(pool.used_count(), 5);
        cache.clear();
        QCOMPARE(cache.cached_pages(), 0);
        QCOMPARE(cache.evictable_pages(), 0);
        QCOMPARE(pool.used_count(), 2);
        for (const int32_t p : kept) QCOMPARE(pool.refcount(p), 1);
        QVERIFY(cache.match(kModelA, run(0, 8)).empty());
        cache.check_invariants();
        // The cache works again after a clear.
        QCOMPARE(cache.insert(kModelA, run(0, 8), kept), 2);
        cache.check_invariants();
        release_all(pool, kept);
        {
            RadixCache scoped(pool, P);
            Ids pages = compute(pool, 2);
            scoped.insert(kModelA, run(5, 8), pages);
            release_all(pool, pages);
            QCOMPARE(pool.used_count(), 4);
        }
        QCOMPARE(pool.used_count(), 2);  // a destroyed cache gives its pages back
        pool.check_invariants();
    }

    void checkerCatchesCorruption() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids pages = compute(pool, 2);
        cache.insert(kModelA, run(0, 8), pages);
        Ids more = compute(pool, 3);
        cache.insert(kModelA, cat(run(0, 4), run(50, 8)), more);  // a parent with two children
        release_all(pool, more);
        cache.check_invariants();

        RadixCacheTestAccess::cached(cache) += 1;
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        RadixCacheTestAccess::cached(cache) -= 1;

        RadixCacheTestAccess::first_tokens(cache, kModelA)[0] += 1;  // no longer matches its key
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        RadixCacheTestAccess::first_tokens(cache, kModelA)[0] -= 1;

        RadixCacheTestAccess::first_tick(cache, kModelA) -= 1;  // parent older than its children
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        RadixCacheTestAccess::first_tick(cache, kModelA) += 1;
        cache.check_invariants();

        // A caller releasing a page it never held takes the cache's reference away.
        pool.release(pages[1]);
        pool.release(pages[1]);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.check_invariants());
        QCOMPARE(*pool.allocate(), pages[1]);  // the last freed page comes back first
        cache.check_invariants();
        pool.release(pages[0]);
    }

    void badInsertsThrowAndChangeNothing() {
        PagePool pool(16);
        RadixCache cache(pool, P);
        Ids pages = compute(pool, 2);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cache.insert(kModelA, run(0, 7), pages));
        QCOMPARE(cache.insert(kModelA, run(0, 8), pages), 2);
        // Offering an already cached page for other tokens would alias two prefixes.
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.insert(kModelA, run(50, 4), Ids{pages[1]}));
        const int32_t loose = *pool.allocate();
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.insert(kModelA, run(60, 8), Ids{loose, loose}));
        pool.release(loose);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, cache.insert(kModelA, run(70, 4), Ids{loose}));  // free page
        QCOMPARE(cache.cached_pages(), 2);
        QCOMPARE(pool.refcount(pages[1]), 2);
        QCOMPARE(pool.used_count(), 2);
        cache.check_invariants();
        QVERIFY_THROWS_EXCEPTION(arbor::Error, RadixCache(pool, 0));
        release_all(pool, pages);
    }
};

QTEST_APPLESS_MAIN(TestRadixCache)
#include "test_radix_cache.moc"
