// The API's prefix-cache namespaces: SipHash-2-4 against the reference vectors of its
// authors, and the rules of CacheScope (the app's namespace 0 only when sharing, one
// namespace per token, keyless clients together, salts apart, the same namespaces under the same key
// and others under another).
#include "api/cache_scope.h"

#include <QtTest>

#include <set>
#include <string>

using arbor::api::CacheScope;
using arbor::api::random_namespace_key;

class TestCacheScope : public QObject {
    Q_OBJECT

private slots:
    // From the SipHash paper's reference implementation (vectors.h): key 00 01 .. 0f,
    // message 00 01 .. (n-1).
    void siphashMatchesTheReferenceVectors() {
        const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
        auto message = [](size_t n) {
            std::string m;
            for (size_t i = 0; i < n; ++i) m.push_back(char(i));
            return m;
        };
        QCOMPARE(arbor::api::siphash24(k0, k1, message(0)), uint64_t(0x726fdb47dd0e0e31ull));
        QCOMPARE(arbor::api::siphash24(k0, k1, message(1)), uint64_t(0x74f839c593dc67fdull));
        QCOMPARE(arbor::api::siphash24(k0, k1, message(7)), uint64_t(0xab0200f58b01d137ull));
        QCOMPARE(arbor::api::siphash24(k0, k1, message(8)), uint64_t(0x93f5f5799a932462ull));
        QCOMPARE(arbor::api::siphash24(k0, k1, message(15)), uint64_t(0xa129ca6149be45e5ull));
        QCOMPARE(arbor::api::siphash24(k0, k1, message(63)), uint64_t(0x958a324ceb064572ull));
    }

    void namespacesFollowTokensAndSalts() {
        const auto key = random_namespace_key();
        const CacheScope scope(false, key);
        const auto keyless = scope.namespace_for(std::nullopt, std::nullopt);
        const auto alice = scope.namespace_for("alice", std::nullopt);
        const std::set<uint64_t> distinct = {0,
                                             keyless,
                                             alice,
                                             scope.namespace_for("bob", std::nullopt),
                                             scope.namespace_for("", std::nullopt),
                                             scope.namespace_for(std::nullopt, "s1"),
                                             scope.namespace_for(std::nullopt, "s2"),
                                             scope.namespace_for("alice", "s1"),
                                             scope.namespace_for("keyless", std::nullopt)};
        QCOMPARE(distinct.size(), size_t(9));
        // Stable for the same inputs: that is the sharing inside a namespace.
        QCOMPARE(scope.namespace_for(std::nullopt, std::nullopt), keyless);
        QCOMPARE(scope.namespace_for("alice", std::nullopt), alice);
        QCOMPARE(scope.namespace_for("alice", "s1"), scope.namespace_for("alice", "s1"));
        // A restarted server with the same key gives the same namespaces (its clients find
        // their pages on disk again); under another key nothing carries over.
        QCOMPARE(CacheScope(false, key).namespace_for("alice", std::nullopt), alice);
        QCOMPARE(CacheScope(false, key).namespace_for(std::nullopt, std::nullopt), keyless);
        const CacheScope other(false, random_namespace_key());
        QVERIFY(other.namespace_for("alice", std::nullopt) != alice);
        QVERIFY(other.namespace_for(std::nullopt, std::nullopt) != keyless);
    }

    void sharingJoinsTheAppUnlessSalted() {
        const CacheScope scope(true, random_namespace_key());
        QCOMPARE(scope.namespace_for(std::nullopt, std::nullopt), uint64_t(0));
        QCOMPARE(scope.namespace_for("any key", std::nullopt), uint64_t(0));
        const auto salted = scope.namespace_for(std::nullopt, "s1");
        QVERIFY(salted != 0);
        QCOMPARE(scope.namespace_for("any key", "s1"), salted);
    }
};

QTEST_APPLESS_MAIN(TestCacheScope)
#include "test_cache_scope.moc"
