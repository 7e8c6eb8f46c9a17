// Opening what the Store did not write last: an older schema, a newer one, damaged
// files, a read-only file; and writes that fail on a full disk.
#include "arbor/store.h"
#include "raw_db.h"
#include "store_checks.h"
#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <csignal>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using arbor::MessageState;
using arbor::Role;
using arbor::Store;
using Kind = arbor::StoreError::Kind;
namespace fs = std::filesystem;

namespace {

std::vector<arbor::MessageId> ids_of(const std::vector<arbor::Message>& messages) {
    std::vector<arbor::MessageId> ids;
    for (const auto& m : messages) ids.push_back(m.id);
    return ids;
}

void write_bytes(const fs::path& file, const std::vector<char>& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<char> noise(std::size_t size, std::uint32_t seed) {
    std::vector<char> bytes(size);
    for (char& b : bytes) {
        seed = seed * 1664525u + 1013904223u;
        b = static_cast<char>(seed >> 24);
    }
    return bytes;
}

std::uintmax_t size_or_zero(const fs::path& file) {
    std::error_code ec;
    const auto size = fs::file_size(file, ec);
    return ec ? 0 : size;
}

// Lowers this process's file size limit, the way a nearly full disk stops writes.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        std::signal(SIGXFSZ, SIG_IGN);  // fail the write with an error instead
        getrlimit(RLIMIT_FSIZE, &saved_);
        rlimit lowered = saved_;
        lowered.rlim_cur = bytes;
        ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
    }
    ~FileSizeLimit() { setrlimit(RLIMIT_FSIZE, &saved_); }
    bool ok() const { return ok_; }

private:
    rlimit saved_{};
    bool ok_ = false;
};

// Root ignores file permissions, so a test of a read-only file runs as nobody.
class Unprivileged {
public:
    Unprivileged() {
        if (geteuid() == 0) dropped_ = ok_ = seteuid(65534) == 0;
    }
    ~Unprivileged() {
        if (dropped_ && seteuid(0) != 0) qFatal("cannot restore root privileges");
    }
    bool ok() const { return ok_; }

private:
    bool dropped_ = false;
    bool ok_ = true;
};

} // namespace

class TestStoreRecovery : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path file() const { return fs::path(dir_.path().toStdString()) / "arbor.db"; }

    // Moved-aside files left in the test directory.
    std::vector<fs::path> corrupt_files() const {
        std::vector<fs::path> out;
        for (const auto& e : fs::directory_iterator(file().parent_path()))
            if (e.path().filename().string().starts_with("arbor.db.corrupt-") &&
                !e.path().string().ends_with("-wal"))
                out.push_back(e.path());
        return out;
    }

    // Puts tests/data/store/`name`, a database at schema `version`, in place as file().
    void copyOldDatabase(const char* name, int version) {
        const fs::path old = arbor::test::test_data_dir() / "store" / name;
        QVERIFY2(fs::exists(old), old.c_str());
        fs::copy_file(old, file());
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA user_version"), std::to_string(version));
    }

private slots:
    void init() {
        QVERIFY(dir_.isValid());
        for (const auto& e : fs::directory_iterator(file().parent_path())) fs::remove_all(e.path());
    }

    void migratesVersion1() {
        copyOldDatabase("arbor-v1.db", 1);
        if (QTest::currentTestFailed()) return;

        Store store(file());
        QCOMPARE(store.open_report().found_version, 1);
        QVERIFY(store.open_report().problem.empty());
        QCOMPARE(store.open_report().interrupted_replies, 1);
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA journal_mode"), std::string("wal"));

        const auto list = store.list_conversations();
        QCOMPARE(list.size(), std::size_t(2));
        QCOMPARE(list[0].title, std::string("Empty draft"));
        QCOMPARE(list[1].title, std::string("Sourdough questions"));
        QCOMPARE(list[1].id, arbor::ConversationId(1));
        QCOMPARE(list[1].created_at, std::int64_t(1700000000000));
        QCOMPARE(list[1].updated_at, std::int64_t(1700000005000));
        QVERIFY(list[1].settings == (arbor::ConversationSettings{"You are a baker.", 0.7, std::nullopt, 40, 512}));
        QVERIFY(list[0].settings == arbor::ConversationSettings{});

        const auto path = store.path(5);
        QCOMPARE(ids_of(path), (std::vector<arbor::MessageId>{1, 2, 4, 5}));
        QCOMPARE(path[0].text, std::string("How long should dough rise?"));
        QCOMPARE(path[0].token_ids, (std::vector<std::int32_t>{101, 102, 103}));
        QCOMPARE(path[1].token_ids, (std::vector<std::int32_t>{201, 70000, 2}));
        QCOMPARE(path[1].role, Role::Assistant);
        QCOMPARE(path[2].text, std::string("And at what temperature?"));
        QCOMPARE(path[3].text, std::string("Around 24"));
        QCOMPARE(path[3].token_ids, (std::vector<std::int32_t>{501, 502}));
        QCOMPARE(path[3].state, MessageState::stopped);  // was left streaming
        QVERIFY(path[3].stats == arbor::MessageStats{});
        QCOMPARE(ids_of(store.children(1)), (std::vector<arbor::MessageId>{2, 3}));
        QCOMPARE(store.message(3).state, MessageState::stopped);
        QCOMPARE(store.app_setting("theme"), std::optional<std::string>("dark"));
        QCOMPARE(store.app_setting("api.port"), std::optional<std::string>("8080"));
        QVERIFY(store.open_tabs().empty());

        // The old rows are searchable and the new columns and table work.
        const auto hits = store.search("temperature");
        QCOMPARE(hits.size(), std::size_t(1));
        QCOMPARE(hits[0].message_id, std::optional<arbor::MessageId>(4));
        const auto r = store.add_message(1, 5, Role::Assistant, "", {}, MessageState::streaming);
        QVERIFY(r > 5);
        store.finish_message(r, MessageState::complete, {10, 4, 3.5, 50.0, "stop"});
        QCOMPARE(store.message(r).stats.cached_tokens, std::optional<int>(4));
        const std::vector<arbor::OpenTab> tabs{{1, r, true}};
        store.save_open_tabs(tabs);
        QVERIFY(store.open_tabs() == tabs);
        // The settings added in version 3 start unset and can be written.
        arbor::ConversationSettings more = store.conversation_settings(1);
        more.repetition_penalty = 1.1;
        more.min_p = 0.1;
        more.seed = 7;
        more.stop_strings = {"\n\n"};
        store.set_conversation_settings(1, more);
        QVERIFY(store.conversation_settings(1) == more);
        QCOMPARE(store.conversation_settings(1).system_prompt, std::string("You are a baker."));
    }

    void migratesVersion5() {
        copyOldDatabase("arbor-v5.db", 5);
        if (QTest::currentTestFailed()) return;

        Store store(file());
        QCOMPARE(store.open_report().found_version, 5);
        QVERIFY(store.open_report().problem.empty());
        QCOMPARE(store.open_report().interrupted_replies, 0);
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));

        const auto list = store.list_conversations();
        QCOMPARE(list.size(), std::size_t(2));
        QCOMPARE(list[1].title, std::string("Tide tables"));
        QVERIFY(list[1].settings ==
                (arbor::ConversationSettings{"Answer briefly.", 0.5, 0.9, std::nullopt, 256, 1.1, 0.05, 42, {"END"}}));
        // Nothing says which model the old conversations used.
        QCOMPARE(list[0].model, std::string());
        QCOMPARE(list[1].model, std::string());
        const auto path = store.path(2);
        QCOMPARE(ids_of(path), (std::vector<arbor::MessageId>{1, 2}));
        QCOMPARE(path[1].token_ids, (std::vector<std::int32_t>{21, 22, 2}));
        QVERIFY(path[1].stats == (arbor::MessageStats{12, 0, 80.5, 31.25, "stop", 0, 0}));
        QCOMPARE(store.app_setting("model.path"), std::optional<std::string>("/models/tides.gguf"));
        QVERIFY(store.open_tabs() == (std::vector<arbor::OpenTab>{{1, 2, true}, {2, std::nullopt, false}}));

        store.set_conversation_model(1, "/models/tides.gguf");
        QCOMPARE(store.conversation(1).model, std::string("/models/tides.gguf"));
        QCOMPARE(store.conversation(1).updated_at, std::int64_t(1750000004000));
        QCOMPARE(store.conversation(2).model, std::string());
    }

    void refusesNewerSchema() {
        { Store store(file()); store.create_conversation("keep me"); }
        arbor::test::raw_exec(file(), "PRAGMA user_version = 99");
        ARBOR_EXPECT_STORE_ERROR(Store{file()}, Kind::invalid);
        QCOMPARE(arbor::test::raw_scalar(file(), "PRAGMA user_version"), std::string("99"));
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT title FROM conversations"), std::string("keep me"));
        QVERIFY(corrupt_files().empty());
    }

    void replacesDamagedFile_data() {
        QTest::addColumn<QString>("damage");
        QTest::newRow("garbage") << "garbage";
        QTest::newRow("text") << "text";
        QTest::newRow("truncated to half") << "half";
        QTest::newRow("truncated inside page 1") << "1000";
    }

    void replacesDamagedFile() {
        QFETCH(QString, damage);
        if (damage == "garbage") {
            write_bytes(file(), noise(8192, 7));
            write_bytes(file().string() + "-wal", noise(4096, 9));  // must not be replayed
        } else if (damage == "text") {
            const std::string text = "this is not a database\n";
            write_bytes(file(), {text.begin(), text.end()});
        } else {
            {
                Store store(file());
                const auto c = store.create_conversation("soon damaged");
                std::optional<arbor::MessageId> parent;
                for (int i = 0; i < 200; ++i)
                    parent = store.add_message(c, parent, Role::User, std::string(400, char('a' + i % 26)), {});
            }
            const auto size = fs::file_size(file());
            fs::resize_file(file(), damage == "half" ? size / 2 : damage.toULongLong());
        }
        const auto damaged = arbor::test::read_bytes(file());
        QVERIFY(arbor::test::raw_quick_check(file()) != "ok");

        {
            Store store(file());
            const auto& report = store.open_report();
            QVERIFY(!report.problem.empty());
            QVERIFY2(report.problem.find(report.moved_aside.string()) != std::string::npos, report.problem.c_str());
            QVERIFY(report.moved_aside.filename().string().starts_with("arbor.db.corrupt-"));
            QCOMPARE(arbor::test::read_bytes(report.moved_aside), damaged);  // nothing lost
            if (damage == "garbage") {
                QCOMPARE(arbor::test::read_bytes(report.moved_aside.string() + "-wal"), noise(4096, 9));
            }
            QCOMPARE(report.found_version, 0);
            if (damage == "half") {
                // The pages left are salvaged (test_store_salvage checks salvage row by row).
                QCOMPARE(report.salvaged_conversations, 1);
                QVERIFY(report.salvaged_messages > 0);
                // The notice says how much was saved.
                const std::string saved = "1 conversation(s) with " + std::to_string(report.salvaged_messages) +
                                          " message(s) were recovered";
                QVERIFY2(report.problem.find(saved) != std::string::npos, report.problem.c_str());
                const auto list = store.list_conversations();
                QCOMPARE(list.size(), std::size_t(1));
                QCOMPARE(list[0].title, std::string("soon damaged"));
                QCOMPARE(store.roots(list[0].id).at(0).text, std::string(400, 'a'));
            } else {
                QCOMPARE(report.salvaged_conversations, 0);
                QVERIFY2(report.problem.find("Nothing in it could be recovered") != std::string::npos,
                         report.problem.c_str());
                QVERIFY(store.list_conversations().empty());
            }
            const auto c = store.create_conversation("fresh start");
            store.add_message(c, std::nullopt, Role::User, "hello", {});
        }
        QCOMPARE(arbor::test::raw_quick_check(file()), std::string("ok"));
        Store again(file());
        QVERIFY(again.open_report().problem.empty());
        QCOMPARE(again.list_conversations().size(), std::size_t(damage == "half" ? 2 : 1));
        QCOMPARE(corrupt_files().size(), std::size_t(1));
    }

    void damagedTwiceKeepsBoth() {
        write_bytes(file(), noise(4096, 1));
        fs::path first;
        { Store store(file()); first = store.open_report().moved_aside; }
        write_bytes(file(), noise(4096, 2));
        Store store(file());
        QVERIFY(!store.open_report().moved_aside.empty());
        QVERIFY(store.open_report().moved_aside != first);
        QCOMPARE(corrupt_files().size(), std::size_t(2));
        QCOMPARE(arbor::test::read_bytes(first), noise(4096, 1));
    }

    void readOnlyFileRefusesWrites() {
        arbor::MessageId reply = 0;
        {
            Store store(file());
            const auto c = store.create_conversation("read only");
            const auto u = store.add_message(c, std::nullopt, Role::User, "question", std::vector<int>{1});
            reply = store.add_message(c, u, Role::Assistant, "", {}, MessageState::streaming);
            store.append_to_message(reply, "partial", std::vector<int>{2});
            store.set_app_setting("theme", "dark");
        }
        // The reply was left streaming; a read-only open cannot (and must not) fix it up.
        const auto before = arbor::test::read_bytes(file());
        QVERIFY(::chmod(file().c_str(), 0444) == 0);
        QVERIFY(::chmod(file().parent_path().c_str(), 0777) == 0);
        {
            Unprivileged nobody;
            if (!nobody.ok()) QSKIP("running as root without the right to drop privileges");
            Store store(file());
            QVERIFY(store.read_only());
            QCOMPARE(store.open_report().interrupted_replies, 0);
            QCOMPARE(store.list_conversations().size(), std::size_t(1));
            QCOMPARE(store.message(reply).text, std::string("partial"));
            QCOMPARE(store.path(reply).size(), std::size_t(2));
            QCOMPARE(store.search("question").size(), std::size_t(1));
            QCOMPARE(store.app_setting("theme"), std::optional<std::string>("dark"));
            std::string message;
            try {
                store.create_conversation("new");
            } catch (const arbor::StoreError& e) {
                message = e.what();
                QCOMPARE(e.kind(), Kind::read_only);
            }
            QVERIFY2(message.find("read-only") != std::string::npos, message.c_str());
            QVERIFY2(message.find(file().string()) != std::string::npos, message.c_str());
            ARBOR_EXPECT_STORE_ERROR(store.append_to_message(reply, "more", std::vector<int>{3}), Kind::read_only);
            ARBOR_EXPECT_STORE_ERROR(store.finish_message(reply, MessageState::complete), Kind::read_only);
            ARBOR_EXPECT_STORE_ERROR(store.set_app_setting("theme", "light"), Kind::read_only);
            ARBOR_EXPECT_STORE_ERROR(store.delete_conversation(1), Kind::read_only);
            ARBOR_EXPECT_STORE_ERROR(store.save_open_tabs({}), Kind::read_only);
        }
        QCOMPARE(arbor::test::read_bytes(file()), before);
        QVERIFY(::chmod(file().c_str(), 0644) == 0);
        Store store(file());
        QVERIFY(!store.read_only());
        QCOMPARE(store.open_report().interrupted_replies, 1);
        QCOMPARE(store.message(reply).text, std::string("partial"));
        QCOMPARE(store.app_setting("theme"), std::optional<std::string>("dark"));
    }

    void fullDiskFailsCleanly() {
        arbor::MessageId question = 0, reply = 0;
        {
            Store store(file());
            const auto c = store.create_conversation("full disk");
            question = store.add_message(c, std::nullopt, Role::User, "question", std::vector<int>{1});
            reply = store.add_message(c, question, Role::Assistant, "", {}, MessageState::streaming);
            store.append_to_message(reply, "kept ", std::vector<int>{2});
            const std::string big(4 << 20, 'x');
            const std::vector<std::int32_t> many(1 << 20, 7);
            {
                const auto used = std::max(size_or_zero(file()), size_or_zero(file().string() + "-wal"));
                FileSizeLimit limit(used + 8192);
                QVERIFY(limit.ok());
                ARBOR_EXPECT_STORE_ERROR(store.add_message(c, question, Role::Assistant, big, {}), Kind::disk_full);
                ARBOR_EXPECT_STORE_ERROR(store.append_to_message(reply, big, many), Kind::disk_full);
                ARBOR_EXPECT_STORE_ERROR(store.set_app_setting("big", big), Kind::disk_full);
            }
            // Space is back: the same Store goes on.
            store.append_to_message(reply, "and more", std::vector<int>{3});
            store.finish_message(reply, MessageState::complete);
            QCOMPARE(ids_of(store.children(question)), std::vector<arbor::MessageId>{reply});
        }
        QCOMPARE(arbor::test::raw_quick_check(file()), std::string("ok"));
        Store store(file());
        QCOMPARE(store.message(reply).text, std::string("kept and more"));
        QCOMPARE(store.message(reply).token_ids, (std::vector<std::int32_t>{2, 3}));
        QCOMPARE(store.app_setting("big"), std::optional<std::string>());
        QCOMPARE(arbor::test::raw_scalar(file(), "SELECT count(*) FROM messages"), std::string("2"));
    }
};

QTEST_APPLESS_MAIN(TestStoreRecovery)
#include "test_store_recovery.moc"
