// The memory of generated replies: exact-text lookup, least-recently-used eviction by
// count and by bytes, refresh on use, separate scopes.
#include "test_support.h"

#include "api/reply_memory.h"

using arbor::api::ReplyMemory;
using Ids = std::vector<arbor::TokenId>;

class TestReplyMemory : public QObject {
    Q_OBJECT

private slots:
    void recallsExactTextOnly() {
        ReplyMemory m;
        m.remember("Hello there", {1, 2, 3});
        QCOMPARE(m.recall("Hello there"), std::optional<Ids>(Ids{1, 2, 3}));
        QVERIFY(!m.recall("Hello there "));
        QVERIFY(!m.recall("hello there"));
        QVERIFY(!m.recall(""));
        m.remember("", {4});
        m.remember("no ids", {});
        QCOMPARE(m.size(), size_t(1));
        m.remember("Hello there", {7, 8});  // the newest ids win
        QCOMPARE(m.recall("Hello there"), std::optional<Ids>(Ids{7, 8}));
        QCOMPARE(m.size(), size_t(1));
    }

    // A text remembered in one scope is unknown in every other.
    void scopesAreSeparate() {
        ReplyMemory m;
        m.remember("Sure, here is the plan.", {5, 6}, 41);
        QVERIFY(!m.recall("Sure, here is the plan."));
        QVERIFY(!m.recall("Sure, here is the plan.", 42));
        QCOMPARE(m.recall("Sure, here is the plan.", 41), std::optional<Ids>(Ids{5, 6}));
        m.remember("Sure, here is the plan.", {7}, 42);  // its own entry, not a replacement
        QCOMPARE(m.size(), size_t(2));
        QCOMPARE(m.recall("Sure, here is the plan.", 41), std::optional<Ids>(Ids{5, 6}));
        QCOMPARE(m.recall("Sure, here is the plan.", 42), std::optional<Ids>(Ids{7}));
    }

    void evictsLeastRecentlyUsedByCount() {
        ReplyMemory m(3);
        m.remember("a", {1});
        m.remember("b", {2});
        m.remember("c", {3});
        QVERIFY(m.recall("a"));  // now the most recent
        m.remember("d", {4});
        QVERIFY(!m.recall("b"));
        QVERIFY(m.recall("a") && m.recall("c") && m.recall("d"));
        QCOMPARE(m.size(), size_t(3));
    }

    void evictsByBytes() {
        const std::string big(1000, 'x');
        ReplyMemory m(100, 2500);
        m.remember(big + "1", Ids(10, 1));
        m.remember(big + "2", Ids(10, 2));
        QCOMPARE(m.size(), size_t(2));
        m.remember(big + "3", Ids(10, 3));
        QCOMPARE(m.size(), size_t(2));
        QVERIFY(!m.recall(big + "1"));
        QVERIFY(m.bytes() <= 2500);
        // An entry larger than the whole budget is not kept.
        m.remember(std::string(5000, 'y'), {1});
        QVERIFY(!m.recall(std::string(5000, 'y')));
        QVERIFY(m.bytes() <= 2500);
    }
};

QTEST_APPLESS_MAIN(TestReplyMemory)
#include "test_reply_memory.moc"
