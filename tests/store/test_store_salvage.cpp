// Salvage of a damaged database: a real store file with pages overwritten in the middle
// of the message table is moved aside, and every conversation and message that can be
// read, and whose ancestors can, comes back exactly into the new database; messages on
// the damaged pages (and their descendants) do not, and the report counts what came back.
// (test_store_recovery covers a truncated file.)
#include "arbor/store.h"
#include "raw_db.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <map>
#include <set>

using arbor::Role;
using arbor::Store;
namespace fs = std::filesystem;

namespace {

constexpr int kConversations = 12, kMessagesEach = 20;

// A message's text (also copied into the search index) and token ids (stored only in
// the message's row: its bytes find the row's page in the file).
std::string text_of(int c, int m) {
    return "c" + std::to_string(c) + "m" + std::to_string(m) + " " + std::string(300, char('a' + (c + m) % 26));
}
std::vector<int32_t> tokens_of(int c, int m) { return {0x41520000 + c * 256 + m, 0x5a5a5a5a}; }
std::string marker(int c, int m) {
    std::string bytes;
    for (int32_t id : tokens_of(c, m))
        for (int b = 0; b < 4; ++b) bytes.push_back(char(uint32_t(id) >> (8 * b)));
    return bytes;
}

std::pair<int, int> key(int c, int m) { return {c, m}; }

// Index of the page (page_size bytes) holding `needle` in `bytes`, or -1.
long page_of(const std::vector<char>& bytes, const std::string& needle, long page_size) {
    const auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
    return it == bytes.end() ? -1 : long(it - bytes.begin()) / page_size;
}

} // namespace

class TestStoreSalvage : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    fs::path file() const { return fs::path(dir_.path().toStdString()) / "arbor.db"; }

private slots:
    void recoversEveryReadableConversation() {
        QVERIFY(dir_.isValid());
        // Original: conversation c holds a chain of messages, each the child of the last.
        std::map<std::pair<int, int>, arbor::MessageId> ids;
        std::vector<arbor::ConversationId> conversations;
        {
            Store store(file());
            for (int c = 0; c < kConversations; ++c) {
                const auto conv = store.create_conversation("conversation " + std::to_string(c));
                conversations.push_back(conv);
                std::optional<arbor::MessageId> parent;
                for (int m = 0; m < kMessagesEach; ++m) {
                    parent = store.add_message(conv, parent, m % 2 ? Role::Assistant : Role::User, text_of(c, m),
                                               tokens_of(c, m));
                    ids[key(c, m)] = *parent;
                }
            }
            store.set_app_setting("theme", "dark");
        }
        const long page_size = std::stol(arbor::test::raw_scalar(file(), "PRAGMA page_size"));
        const auto original = arbor::test::read_bytes(file());
        auto bytes = original;
        // Damage the pages holding four messages: the table's first leaf and three in the
        // middle.
        std::set<long> damaged;
        for (auto [c, m] : {std::pair{0, 2}, std::pair{2, 5}, std::pair{6, 0}, std::pair{9, 12}}) {
            const long page = page_of(original, marker(c, m), page_size);
            QVERIFY2(page > 0, qPrintable(QString("message %1 of conversation %2 not found").arg(m).arg(c)));
            damaged.insert(page);
        }
        for (long page : damaged)
            for (long i = 0; i < page_size; ++i) bytes[size_t(page * page_size + i)] = char((i * 131 + page) & 0xff);
        std::ofstream(file(), std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
        QVERIFY(arbor::test::raw_quick_check(file()) != "ok");

        // What must come back: messages off the damaged pages whose ancestors are too.
        std::map<int, int> expected_depth;  // conversation -> messages kept (a prefix of its chain)
        int expected_messages = 0;
        for (int c = 0; c < kConversations; ++c) {
            int kept = 0;
            while (kept < kMessagesEach && !damaged.count(page_of(original, marker(c, kept), page_size))) ++kept;
            expected_depth[c] = kept;
            expected_messages += kept;
        }
        QVERIFY(expected_messages < kConversations * kMessagesEach);

        Store store(file());
        const auto& report = store.open_report();
        QVERIFY(!report.moved_aside.empty());
        QCOMPARE(report.salvaged_conversations, kConversations);
        QCOMPARE(report.salvaged_messages, expected_messages);
        QVERIFY2(report.problem.find(std::to_string(expected_messages) + " message(s) were recovered") != std::string::npos,
                 report.problem.c_str());
        QCOMPARE(arbor::test::read_bytes(report.moved_aside), bytes);  // the damaged file is left as it was
        QCOMPARE(store.list_conversations().size(), size_t(kConversations));
        for (int c = 0; c < kConversations; ++c) {
            const int kept = expected_depth[c];
            if (kept == 0) {
                QVERIFY(store.roots(conversations[size_t(c)]).empty());
                continue;
            }
            const auto path = store.path(ids[key(c, kept - 1)]);
            QCOMPARE(int(path.size()), kept);
            for (int m = 0; m < kept; ++m) {
                QCOMPARE(path[size_t(m)].id, ids[key(c, m)]);
                QCOMPARE(path[size_t(m)].text, text_of(c, m));
                QVERIFY(path[size_t(m)].token_ids == tokens_of(c, m));
                QCOMPARE(path[size_t(m)].role, m % 2 ? Role::Assistant : Role::User);
            }
            QVERIFY(store.children(ids[key(c, kept - 1)]).empty());
        }
        QCOMPARE(store.app_setting("theme"), std::optional<std::string>("dark"));
        // The recovered text is searchable, and new rows do not collide with old ids.
        QVERIFY(expected_depth[4] >= 1);
        const auto hits = store.search("c4m0");
        QCOMPARE(hits.size(), size_t(1));
        QCOMPARE(hits[0].message_id, std::optional<arbor::MessageId>(ids[key(4, 0)]));
        const auto fresh = store.create_conversation("after the salvage");
        QVERIFY(fresh > conversations.back());
        QCOMPARE(arbor::test::raw_quick_check(file()), std::string("ok"));
    }
};

QTEST_APPLESS_MAIN(TestStoreSalvage)
#include "test_store_salvage.moc"
