#include "kv/block_table.h"
#include "kv/page_pool.h"

#include "arbor/error.h"

#include <QtTest>

#include <set>
#include <stdexcept>

namespace arbor::kv {
struct PagePoolTestAccess {
    static std::vector<int32_t>& refcounts(PagePool& p) { return p.refcount_; }
    static std::vector<int32_t>& free_list(PagePool& p) { return p.free_; }
};
} // namespace arbor::kv

using arbor::kv::BlockTable;
using arbor::kv::PagePoolTestAccess;
using arbor::kv::PagePool;

class TestPagePool : public QObject {
    Q_OBJECT

private slots:
    void allocateToExhaustion() {
        PagePool pool(5);
        QCOMPARE(pool.capacity(), 5);
        QCOMPARE(pool.free_count(), 5);
        QCOMPARE(pool.used_count(), 0);
        std::set<int32_t> got;
        for (int i = 0; i < 5; ++i) {
            const auto page = pool.allocate();
            QVERIFY(page.has_value());
            QVERIFY(*page >= 0 && *page < 5);
            QCOMPARE(pool.refcount(*page), 1);
            got.insert(*page);
            QCOMPARE(pool.used_count(), i + 1);
            QCOMPARE(pool.free_count(), 4 - i);
        }
        QCOMPARE(got.size(), size_t(5));
        QVERIFY(!pool.allocate().has_value());
        QVERIFY(!pool.allocate().has_value());
        QCOMPARE(pool.free_count(), 0);
        pool.check_invariants();
    }

    void releaseMakesPageReusable() {
        PagePool pool(3);
        const int32_t a = *pool.allocate();
        const int32_t b = *pool.allocate();
        const int32_t c = *pool.allocate();
        QVERIFY(!pool.allocate());
        pool.release(b);
        QCOMPARE(pool.refcount(b), 0);
        QCOMPARE(pool.free_count(), 1);
        const auto again = pool.allocate();
        QVERIFY(again.has_value());
        QCOMPARE(*again, b);
        QCOMPARE(pool.refcount(b), 1);
        pool.release(a);
        pool.release(b);
        pool.release(c);
        QCOMPARE(pool.free_count(), 3);
        pool.check_invariants();
    }

    void retainReleaseCounting() {
        PagePool pool(2);
        const int32_t p = *pool.allocate();
        pool.retain(p);
        pool.retain(p);
        QCOMPARE(pool.refcount(p), 3);
        pool.release(p);
        QCOMPARE(pool.refcount(p), 2);
        QCOMPARE(pool.free_count(), 1);
        pool.release(p);
        QCOMPARE(pool.free_count(), 1);  // still referenced once
        pool.release(p);
        QCOMPARE(pool.refcount(p), 0);
        QCOMPARE(pool.free_count(), 2);
        pool.check_invariants();
    }

    void allocateManyIsAllOrNothing() {
        PagePool pool(4);
        const auto three = pool.allocate_many(3);
        QCOMPARE(three.size(), size_t(3));
        QCOMPARE(std::set<int32_t>(three.begin(), three.end()).size(), size_t(3));
        QVERIFY(pool.allocate_many(2).empty());
        QCOMPARE(pool.free_count(), 1);  // the refused call took nothing
        QCOMPARE(pool.allocate_many(1).size(), size_t(1));
        pool.check_invariants();
    }

    void doubleReleaseThrowsAndLeavesPoolIntact() {
        PagePool pool(3);
        const int32_t p = *pool.allocate();
        const int32_t q = *pool.allocate();
        pool.release(p);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.release(p));
        // The refused release corrupted nothing: p is free exactly once.
        pool.check_invariants();
        QCOMPARE(pool.free_count(), 2);
        QCOMPARE(pool.refcount(p), 0);
        QCOMPARE(pool.refcount(q), 1);
        const int32_t r = *pool.allocate();
        const int32_t s = *pool.allocate();
        QVERIFY(r != s && r != q && s != q);
        QVERIFY(!pool.allocate());
    }

    void checkerCatchesCorruption() {
        // What an unchecked double release would leave: count below 0, listed twice.
        {
            PagePool pool(3);
            const int32_t p = *pool.allocate();
            pool.release(p);
            PagePoolTestAccess::refcounts(pool)[size_t(p)] = -1;
            PagePoolTestAccess::free_list(pool).push_back(p);
            QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.check_invariants());
            PagePoolTestAccess::refcounts(pool)[size_t(p)] = 0;
            QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.check_invariants());  // still listed twice
            PagePoolTestAccess::free_list(pool).pop_back();
            pool.check_invariants();
        }
        {
            PagePool pool(3);
            const int32_t p = *pool.allocate();
            PagePoolTestAccess::refcounts(pool)[size_t(p)] = 0;  // leaked: free but not listed
            QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.check_invariants());
        }
        {
            PagePool pool(3);
            PagePoolTestAccess::refcounts(pool)[1] = 1;  // in use yet on the free list
            QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.check_invariants());
        }
    }

    void misuseThrowsLogicError() {
        PagePool pool(2);
        QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.retain(0));  // free page
        QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.release(2));
        QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.retain(-1));
        QVERIFY_THROWS_EXCEPTION(std::logic_error, pool.refcount(7));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, PagePool(-1));
        pool.check_invariants();
        QCOMPARE(pool.free_count(), 2);
    }

    void emptyPool() {
        PagePool pool(0);
        QCOMPARE(pool.capacity(), 0);
        QVERIFY(!pool.allocate());
        pool.check_invariants();
    }

    void blockTablePagesFor() {
        QCOMPARE(BlockTable::pages_for(0, 16), 0);
        QCOMPARE(BlockTable::pages_for(1, 16), 1);
        QCOMPARE(BlockTable::pages_for(16, 16), 1);
        QCOMPARE(BlockTable::pages_for(17, 16), 2);
        QCOMPARE(BlockTable::pages_for(33, 1), 33);
        QCOMPARE(BlockTable::pages_for(2147483647, 16), 134217728);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, BlockTable::pages_for(5, 0));
        BlockTable t{{4, 9, 2}};
        QCOMPARE(t.token_capacity(16), 48);
    }
};

QTEST_APPLESS_MAIN(TestPagePool)
#include "test_page_pool.moc"
