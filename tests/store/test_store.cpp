// The Store's conversations, message trees, streaming replies, settings and tabs.
#include "arbor/store.h"
#include "raw_db.h"
#include "store_checks.h"

#include <QTemporaryDir>
#include <QtTest>

#include <climits>

using arbor::ConversationSettings;
using arbor::Message;
using arbor::MessageState;
using arbor::OpenTab;
using arbor::Role;
using arbor::Store;
using Kind = arbor::StoreError::Kind;

namespace {

std::vector<arbor::MessageId> ids_of(const std::vector<Message>& messages) {
    std::vector<arbor::MessageId> ids;
    for (const Message& m : messages) ids.push_back(m.id);
    return ids;
}

std::vector<arbor::ConversationId> listed(const Store& store) {
    std::vector<arbor::ConversationId> ids;
    for (const auto& c : store.list_conversations()) ids.push_back(c.id);
    return ids;
}

} // namespace

class TestStore : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::filesystem::path file() const { return std::filesystem::path(dir_.path().toStdString()) / "sub" / "arbor.db"; }

private slots:
    void init() { QVERIFY(dir_.isValid()); std::filesystem::remove_all(file().parent_path()); }

    void newFileIsWalAtCurrentVersion() {
        {
            Store store(file());
            QVERIFY(std::filesystem::exists(file()));
            QCOMPARE(store.open_report().found_version, 0);
            QVERIFY(store.open_report().problem.empty());
            QVERIFY(!store.read_only());
            QVERIFY2(store.full_text_search(), "Debian's SQLite has FTS5");
        }
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA journal_mode"), std::string("wal"));
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA user_version"),
                 std::to_string(Store::kSchemaVersion));
    }

    void defaultPathFollowsXdg() {
        const QByteArray saved = qgetenv("XDG_DATA_HOME");
        qputenv("XDG_DATA_HOME", "/xdg/data");
        const auto path = Store::default_path();
        if (saved.isNull()) qunsetenv("XDG_DATA_HOME");
        else qputenv("XDG_DATA_HOME", saved);
        QCOMPARE(QString::fromStdString(path.string()), QString("/xdg/data/arbor/arbor.db"));
    }

    void conversationCrud() {
        Store store(file());
        ConversationSettings settings{"Be brief.", 0.5, 0.9, 40, 256};
        const auto a = store.create_conversation("First", settings);
        const auto b = store.create_conversation("Second");
        QVERIFY(a != b);

        const auto first = store.conversation(a);
        QCOMPARE(first.title, std::string("First"));
        QVERIFY(first.settings == settings);
        QVERIFY(first.created_at > 0);
        QCOMPARE(first.updated_at, first.created_at);
        QVERIFY(store.conversation(b).settings == ConversationSettings{});

        store.rename_conversation(a, "Renamed ✓");
        QCOMPARE(store.conversation(a).title, std::string("Renamed ✓"));

        const auto m1 = store.add_message(a, std::nullopt, Role::User, "hi", std::vector<int>{1, 2});
        const auto m2 = store.add_message(a, m1, Role::Assistant, "hello", std::vector<int>{3});
        const std::vector<OpenTab> tabs{{a, m2, true}, {b, std::nullopt, false}};
        store.save_open_tabs(tabs);

        store.delete_conversation(a);
        ARBOR_EXPECT_STORE_ERROR(store.conversation(a), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.message(m1), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.message(m2), Kind::not_found);
        QCOMPARE(store.open_tabs().size(), std::size_t(1));
        QCOMPARE(store.open_tabs()[0].conversation_id, b);
        QCOMPARE(listed(store), std::vector<arbor::ConversationId>{b});
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT count(*) FROM messages"), std::string("0"));

        ARBOR_EXPECT_STORE_ERROR(store.rename_conversation(a, "x"), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.delete_conversation(a), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.add_message(a, std::nullopt, Role::User, "x", {}), Kind::not_found);
    }

    void treeWithBranches() {
        Store store(file());
        const auto c = store.create_conversation("Tree");
        const auto other = store.create_conversation("Other");
        const std::vector<std::int32_t> extremes{0, -1, INT32_MAX, INT32_MIN, 70000};
        const auto u1 = store.add_message(c, std::nullopt, Role::User, "question", extremes);
        const auto a1 = store.add_message(c, u1, Role::Assistant, "answer one", std::vector<int>{11});
        const auto a2 = store.add_message(c, u1, Role::Assistant, "answer two", std::vector<int>{12});
        const auto u2 = store.add_message(c, a1, Role::User, "follow-up", std::vector<int>{21});
        const auto a3 = store.add_message(c, u2, Role::Assistant, "answer three", std::vector<int>{31});
        const auto edited = store.add_message(c, std::nullopt, Role::User, "question, edited", {});

        QCOMPARE(ids_of(store.children(u1)), (std::vector<arbor::MessageId>{a1, a2}));
        QCOMPARE(ids_of(store.children(a1)), std::vector<arbor::MessageId>{u2});
        QVERIFY(store.children(a3).empty());
        QCOMPARE(ids_of(store.roots(c)), (std::vector<arbor::MessageId>{u1, edited}));
        QVERIFY(store.roots(other).empty());
        QCOMPARE(ids_of(store.path(a3)), (std::vector<arbor::MessageId>{u1, a1, u2, a3}));
        QCOMPARE(ids_of(store.path(a2)), (std::vector<arbor::MessageId>{u1, a2}));
        QCOMPARE(ids_of(store.path(u1)), std::vector<arbor::MessageId>{u1});
        QCOMPARE(store.latest_leaf(c), std::optional<arbor::MessageId>(edited));
        QCOMPARE(store.latest_leaf(other), std::optional<arbor::MessageId>());

        const Message q = store.message(u1);
        QCOMPARE(q.conversation_id, c);
        QVERIFY(!q.parent_id);
        QCOMPARE(q.role, Role::User);
        QCOMPARE(q.text, std::string("question"));
        QCOMPARE(q.token_ids, extremes);
        QCOMPARE(q.state, MessageState::complete);
        const Message a = store.message(a2);
        QCOMPARE(a.parent_id, std::optional<arbor::MessageId>(u1));
        QCOMPARE(a.role, Role::Assistant);
        QVERIFY(store.message(edited).token_ids.empty());

        // Little-endian int32, whatever the host.
        const auto blob = arbor::test::raw_blob(file(), "SELECT token_ids FROM messages WHERE id = " + std::to_string(u1));
        const std::vector<unsigned char> expected{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
                                                  0, 0, 0, 0x80, 0x70, 0x11, 0x01, 0};
        QCOMPARE(blob, expected);

        ARBOR_EXPECT_STORE_ERROR(store.add_message(other, a1, Role::User, "x", {}), Kind::invalid);
        ARBOR_EXPECT_STORE_ERROR(store.add_message(c, 999999, Role::User, "x", {}), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.path(999999), Kind::not_found);
        ARBOR_EXPECT_STORE_ERROR(store.message(999999), Kind::not_found);
    }

    void orderedByLatestActivity() {
        Store store(file());
        const auto a = store.create_conversation("A");
        const auto b = store.create_conversation("B");
        const auto c = store.create_conversation("C");
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{c, b, a}));

        const auto m = store.add_message(a, std::nullopt, Role::User, "hi", {});
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{a, c, b}));
        QVERIFY(store.conversation(a).updated_at > store.conversation(c).updated_at);

        store.rename_conversation(b, "B renamed");  // not activity
        store.set_conversation_settings(b, {"x", 1.0, {}, {}, {}});
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{a, c, b}));

        const auto reply = store.add_message(b, std::nullopt, Role::Assistant, "", {}, MessageState::streaming);
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{b, a, c}));
        store.add_message(a, m, Role::Assistant, "yo", {});
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{a, b, c}));
        store.finish_message(reply, MessageState::complete);
        QCOMPARE(listed(store), (std::vector<arbor::ConversationId>{b, a, c}));
    }

    void streamingReply() {
        Store store(file());
        const auto c = store.create_conversation("Stream");
        const auto u = store.add_message(c, std::nullopt, Role::User, "tell me", std::vector<int>{5});
        const auto r = store.add_message(c, u, Role::Assistant, "", {}, MessageState::streaming);
        QCOMPARE(store.message(r).state, MessageState::streaming);

        std::string text;
        std::vector<std::int32_t> ids;
        for (int i = 0; i < 50; ++i) {
            const std::string piece = "piece" + std::to_string(i) + (i % 7 == 0 ? "\n" : " ");
            const std::vector<std::int32_t> chunk{i, -i, i * 1000};
            store.append_to_message(r, piece, chunk);
            text += piece;
            ids.insert(ids.end(), chunk.begin(), chunk.end());
        }
        store.append_to_message(r, "", {});  // nothing new: allowed, changes nothing
        const std::string where = " FROM messages WHERE id = " + std::to_string(r);
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT typeof(token_ids)" + where), std::string("blob"));
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT typeof(text)" + where), std::string("text"));
        Message m = store.message(r);
        QCOMPARE(m.text, text);
        QCOMPARE(m.token_ids, ids);
        QCOMPARE(m.state, MessageState::streaming);

        arbor::MessageStats stats;
        stats.prompt_tokens = 120;
        stats.cached_tokens = 96;
        stats.disk_tokens = 64;
        stats.ttft_ms = 12.5;
        stats.tokens_per_second = 87.25;
        stats.finish_reason = "stop";
        stats.omitted_messages = 4;
        store.finish_message(r, MessageState::complete, stats);
        m = store.message(r);
        QCOMPARE(m.state, MessageState::complete);
        QVERIFY(m.stats == stats);
        QCOMPARE(m.stats.omitted_messages, std::optional<int>(4));
        QCOMPARE(m.text, text);
        QVERIFY(store.message(u).stats == arbor::MessageStats{});

        ARBOR_EXPECT_STORE_ERROR(store.append_to_message(r, "late", std::vector<int>{1}), Kind::invalid);
        ARBOR_EXPECT_STORE_ERROR(store.finish_message(r, MessageState::stopped), Kind::invalid);
        ARBOR_EXPECT_STORE_ERROR(store.append_to_message(999999, "x", {}), Kind::not_found);
        const auto r2 = store.add_message(c, u, Role::Assistant, "", {}, MessageState::streaming);
        ARBOR_EXPECT_STORE_ERROR(store.finish_message(r2, MessageState::streaming), Kind::invalid);
        store.finish_message(r2, MessageState::error, {{}, {}, {}, {}, "engine failed"});
        QCOMPARE(store.message(r2).state, MessageState::error);
        QCOMPARE(store.message(r2).stats.finish_reason, std::string("engine failed"));
        QCOMPARE(store.message(r).text, text);  // the failed append left it alone
    }

    // A finished reply resumed (Continue) grows in place and is finished again; one that
    // has replies below it, a user message or an error reply cannot be resumed.
    void resumedReplyGrowsInPlace() {
        Store store(file());
        const auto c = store.create_conversation("Continue");
        const auto u = store.add_message(c, std::nullopt, Role::User, "write", std::vector<int>{5});
        const auto r = store.add_message(c, u, Role::Assistant, "Once upon", std::vector<int>{7, 8},
                                         MessageState::complete);
        store.resume_message(r);
        QCOMPARE(store.message(r).state, MessageState::streaming);
        store.append_to_message(r, " a time", std::vector<int>{9});
        store.finish_message(r, MessageState::complete, {{}, {}, {}, {}, "length"});
        const Message m = store.message(r);
        QCOMPARE(m.text, std::string("Once upon a time"));
        QCOMPARE(m.token_ids, (std::vector<std::int32_t>{7, 8, 9}));
        QCOMPARE(m.state, MessageState::complete);
        QCOMPARE(store.children(u).size(), std::size_t(1));

        ARBOR_EXPECT_STORE_ERROR(store.resume_message(u), Kind::invalid);
        store.add_message(c, r, Role::User, "more", std::vector<int>{6});
        ARBOR_EXPECT_STORE_ERROR(store.resume_message(r), Kind::invalid);
        const auto failed = store.add_message(c, u, Role::Assistant, "", {}, MessageState::error);
        ARBOR_EXPECT_STORE_ERROR(store.resume_message(failed), Kind::invalid);
        ARBOR_EXPECT_STORE_ERROR(store.resume_message(999999), Kind::not_found);
        QCOMPARE(store.message(r).state, MessageState::complete);
    }

    void settingsRoundTrip() {
        arbor::ConversationId c = 0;
        const ConversationSettings full{"You are terse.\nAnswer in French.", 0.0, 1.0, 0, 4096, 1.15, 0.05,
                                        std::int64_t(1) << 40, {"\n\n", "###", "User:"}};
        {
            Store store(file());
            c = store.create_conversation("Settings");
            QVERIFY(store.conversation_settings(c) == ConversationSettings{});
            store.set_conversation_settings(c, full);
            store.set_app_setting("theme", "dark");
            store.set_app_setting("api.port", "8080");
            store.set_app_setting("theme", "light");
            store.set_app_setting("gone", "soon");
            store.remove_app_setting("gone");
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", -1.0, {}, {}, {}}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, 1.5, {}, {}}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, -2, {}}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, {}, 0}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, {}, {}, 0.0}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, {}, {}, {}, 1.5}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, {}, {}, {}, {}, -1}),
                                     Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(c, {"", {}, {}, {}, {}, {}, {}, {}, {""}}),
                                     Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(
                store.set_conversation_settings(c, {"", {}, {}, {}, {}, {}, {}, {}, {"a\x1f" "b"}}), Kind::invalid);
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_settings(424242, full), Kind::not_found);
            ARBOR_EXPECT_STORE_ERROR(store.set_app_setting("", "x"), Kind::invalid);
        }
        Store store(file());
        QVERIFY(store.conversation_settings(c) == full);
        QCOMPARE(store.app_setting("theme"), std::optional<std::string>("light"));
        QCOMPARE(store.app_setting("api.port"), std::optional<std::string>("8080"));
        QCOMPARE(store.app_setting("gone"), std::optional<std::string>());
        QCOMPARE(store.app_setting("never"), std::optional<std::string>());
        store.set_conversation_settings(c, {});
        QVERIFY(store.conversation_settings(c) == ConversationSettings{});
    }

    void modelRoundTrip() {
        arbor::ConversationId a = 0, b = 0;
        std::int64_t updated = 0;
        {
            Store store(file());
            a = store.create_conversation("A");
            b = store.create_conversation("B");
            QCOMPARE(store.conversation(a).model, std::string());
            updated = store.conversation(a).updated_at;
            store.set_conversation_model(a, "/models/first.gguf");
            store.set_conversation_model(a, "/models/ünïcode second.gguf");
            ARBOR_EXPECT_STORE_ERROR(store.set_conversation_model(424242, "/models/x.gguf"), Kind::not_found);
        }
        Store store(file());
        QCOMPARE(store.conversation(a).model, std::string("/models/ünïcode second.gguf"));
        QCOMPARE(store.conversation(b).model, std::string());
        // Recording the model is no activity: the list keeps its order.
        QCOMPARE(store.conversation(a).updated_at, updated);
        const auto list = store.list_conversations();
        QCOMPARE(list.size(), std::size_t(2));
        QCOMPARE(list[0].id, b);
        QCOMPARE(list[1].model, std::string("/models/ünïcode second.gguf"));
        store.set_conversation_model(a, "");
        QCOMPARE(store.conversation(a).model, std::string());
    }

    void tabsRoundTrip() {
        std::vector<OpenTab> tabs;
        arbor::ConversationId a = 0, b = 0;
        {
            Store store(file());
            QVERIFY(store.open_tabs().empty());
            a = store.create_conversation("A");
            b = store.create_conversation("B");
            const auto m = store.add_message(a, std::nullopt, Role::User, "hi", {});
            tabs = {{b, std::nullopt, false}, {a, m, true}, {b, std::nullopt, false}};
            store.save_open_tabs(tabs);
        }
        Store store(file());
        QVERIFY(store.open_tabs() == tabs);

        // A bad list is refused as a whole: the saved one stays.
        const std::vector<OpenTab> bad_conversation{{a, std::nullopt, true}, {777777, std::nullopt, false}};
        ARBOR_EXPECT_STORE_ERROR(store.save_open_tabs(bad_conversation), Kind::not_found);
        const std::vector<OpenTab> leaf_elsewhere{{b, tabs[1].leaf_id, true}};
        ARBOR_EXPECT_STORE_ERROR(store.save_open_tabs(leaf_elsewhere), Kind::invalid);
        QVERIFY(store.open_tabs() == tabs);

        store.save_open_tabs({});
        QVERIFY(store.open_tabs().empty());
    }

    void secondStoreDoesNotStopLiveReplies() {
        Store first(file());
        const auto c = first.create_conversation("Live");
        const auto r = first.add_message(c, std::nullopt, Role::Assistant, "", {}, MessageState::streaming);
        first.append_to_message(r, "part one ", std::vector<int>{1});
        {
            Store second(file());
            QCOMPARE(second.open_report().interrupted_replies, 0);
            QCOMPARE(second.message(r).state, MessageState::streaming);
            QCOMPARE(second.message(r).text, std::string("part one "));
        }
        first.append_to_message(r, "part two", std::vector<int>{2});
        first.finish_message(r, MessageState::complete);
        QCOMPARE(first.message(r).text, std::string("part one part two"));
        QCOMPARE(first.message(r).token_ids, (std::vector<std::int32_t>{1, 2}));
    }
};

QTEST_APPLESS_MAIN(TestStore)
#include "test_store.moc"
