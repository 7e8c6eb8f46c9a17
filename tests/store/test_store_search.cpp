// Store::search over titles and message text, with FTS5 and with the LIKE fallback.
#include "arbor/store.h"
#include "raw_db.h"

#include <QTemporaryDir>
#include <QtTest>

using arbor::ConversationId;
using arbor::MessageState;
using arbor::Role;
using arbor::SearchHit;
using arbor::Store;
using arbor::StoreOptions;

namespace {

std::vector<ConversationId> hit_ids(const std::vector<SearchHit>& hits) {
    std::vector<ConversationId> ids;
    for (const SearchHit& h : hits) ids.push_back(h.conversation_id);
    return ids;
}

} // namespace

class TestStoreSearch : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::filesystem::path file() const { return std::filesystem::path(dir_.path().toStdString()) / "arbor.db"; }
    StoreOptions options() const {
        QFETCH_GLOBAL(bool, fts);
        StoreOptions o;
        o.full_text_search = fts;
        return o;
    }

    // Ids of the sample conversations, in creation order.
    ConversationId rust_ = 0, cooking_ = 0, trip_ = 0;
    arbor::MessageId bread_ = 0;

    void fill(Store& store) {
        rust_ = store.create_conversation("Rust borrow checker");
        const auto q = store.add_message(rust_, std::nullopt, Role::User, "Why does the compiler complain?", {});
        store.add_message(rust_, q, Role::Assistant, "Because two mutable borrows overlap.", {});
        cooking_ = store.create_conversation("Cooking");
        const auto u = store.add_message(cooking_, std::nullopt, Role::User, "How do I bake sourdough bread?", {});
        bread_ = store.add_message(cooking_, u, Role::Assistant,
                                   "Feed the starter the night before, then mix flour, water and salt. "
                                   "Let the dough rise until it doubles and bake it hot.",
                                   {});
        trip_ = store.create_conversation("Trip");
        store.add_message(trip_, std::nullopt, Role::User, "A Paris itinerary with café stops (50% budget_cut)", {});
    }

private slots:
    void initTestCase_data() {
        QTest::addColumn<bool>("fts");
        QTest::newRow("fts5") << true;
        QTest::newRow("like") << false;
    }

    void init() {
        QVERIFY(dir_.isValid());
        for (const char* suffix : {"", "-wal", "-shm", ".lock"})
            std::filesystem::remove(file().string() + suffix);
    }

    void modeAsRequested() {
        QFETCH_GLOBAL(bool, fts);
        Store store(file(), options());
        QCOMPARE(store.full_text_search(), fts);
    }

    void findsMessagesAndTitles() {
        Store store(file(), options());
        fill(store);

        auto hits = store.search("sourdough");
        QCOMPARE(hit_ids(hits), std::vector<ConversationId>{cooking_});
        QCOMPARE(hits[0].title, std::string("Cooking"));
        QVERIFY(hits[0].message_id.has_value());
        QVERIFY2(QString::fromStdString(hits[0].snippet).contains("sourdough"), hits[0].snippet.c_str());

        hits = store.search("borrow");  // in the title and in a message: the title wins
        QCOMPARE(hit_ids(hits), std::vector<ConversationId>{rust_});
        QVERIFY(!hits[0].message_id.has_value());

        hits = store.search("DOUGH rise");  // every word, in one message, any case
        QCOMPARE(hit_ids(hits), std::vector<ConversationId>{cooking_});
        QCOMPARE(hits[0].message_id, std::optional<arbor::MessageId>(bread_));
        QVERIFY2(QString::fromStdString(hits[0].snippet).contains("rise"), hits[0].snippet.c_str());

        QCOMPARE(hit_ids(store.search("sourd")), std::vector<ConversationId>{cooking_});  // prefix
        QVERIFY(store.search("bread paris").empty());
        QVERIFY(store.search("zebra").empty());
        QVERIFY(store.search("").empty());
        QVERIFY(store.search("   ").empty());
        QCOMPARE(hit_ids(store.search("café")), std::vector<ConversationId>{trip_});
    }

    void newestActivityFirstWithLimit() {
        Store store(file(), options());
        fill(store);
        // "the" is in the rust and the cooking conversations; cooking is newer.
        QCOMPARE(hit_ids(store.search("the")), (std::vector<ConversationId>{cooking_, rust_}));
        store.add_message(rust_, std::nullopt, Role::User, "another question", {});
        QCOMPARE(hit_ids(store.search("the")), (std::vector<ConversationId>{rust_, cooking_}));
        QCOMPARE(hit_ids(store.search("the", 1)), std::vector<ConversationId>{rust_});
        QVERIFY(store.search("the", 0).empty());
    }

    void queryTextIsNeverSyntax() {
        Store store(file(), options());
        fill(store);
        for (const char* q : {"\"", "bread\" OR (", "NOT", "a AND", "*", "c++", "title:x", "50%", "_", "\\"})
            store.search(q);  // must not throw
        QVERIFY(store.search("NOT").empty());
        QVERIFY(store.search("bread\" OR (").empty());
    }

    void followsRenamesDeletesAndStreaming() {
        Store store(file(), options());
        fill(store);
        store.rename_conversation(trip_, "Holiday plans");
        QCOMPARE(hit_ids(store.search("holiday")), std::vector<ConversationId>{trip_});
        QVERIFY(store.search("trip").empty());

        const auto r = store.add_message(trip_, std::nullopt, Role::Assistant, "", {}, MessageState::streaming);
        store.append_to_message(r, "Visit the Louvre ", std::vector<int>{1});
        store.append_to_message(r, "early.", std::vector<int>{2});
        QVERIFY(store.search("louvre").empty());  // not until it finishes
        store.finish_message(r, MessageState::complete);
        auto hits = store.search("louvre");
        QCOMPARE(hit_ids(hits), std::vector<ConversationId>{trip_});
        QCOMPARE(hits[0].message_id, std::optional<arbor::MessageId>(r));

        store.delete_conversation(cooking_);
        QVERIFY(store.search("sourdough").empty());
        QVERIFY(store.search("cooking").empty());
    }

    void indexCatchesUpWhenTurnedOn() {
        // The same in both rows: written without the index, reopened with it.
        {
            StoreOptions off;
            off.full_text_search = false;
            Store store(file(), off);
            fill(store);  // written while no trigger maintains the index
        }
        StoreOptions on;
        on.full_text_search = true;
        Store store(file(), on);
        QVERIFY(store.full_text_search());
        QCOMPARE(hit_ids(store.search("sourdough")), std::vector<ConversationId>{cooking_});
        QCOMPARE(hit_ids(store.search("rust")), std::vector<ConversationId>{rust_});
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT count(*) FROM message_fts"), std::string("5"));
    }
};

QTEST_APPLESS_MAIN(TestStoreSearch)
#include "test_store_search.moc"
