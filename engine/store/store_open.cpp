// Opening a Store: the lock, the health check (moving a damaged file aside), the
// connection settings, migrations, the search index, and the crash fix-up.
#include "arbor/paths.h"
#include "store/private_files.h"
#include "store/salvage.h"
#include "store/schema.h"
#include "store/store_impl.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>

namespace arbor {

namespace fs = std::filesystem;

namespace {

// Empty when the file reads as a healthy database, else what is wrong with it.
std::string health_problem(store::Db& db) {
    try {
        const auto result = db.scalar_text("PRAGMA quick_check");
        if (result && *result == "ok") return {};
        return "the integrity check failed: " + result.value_or("no result");
    } catch (const StoreError& e) {
        if (e.kind() == StoreError::Kind::corrupt) return sqlite3_errmsg(db.handle());
        throw;
    }
}

std::string utc_stamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

fs::path with_suffix(const fs::path& file, const std::string& suffix) {
    return fs::path(file.string() + suffix);
}

// Renames the database (and its WAL, which belongs to it and must not be replayed into
// the new file) to <file>.corrupt-<stamp>[-n]; returns the new name.
fs::path move_aside(const fs::path& file) {
    const std::string stamp = ".corrupt-" + utc_stamp();
    fs::path target = with_suffix(file, stamp);
    std::error_code ec;
    for (int n = 1; fs::exists(target, ec); ++n)
        target = with_suffix(file, stamp + "-" + std::to_string(n));
    fs::rename(file, target, ec);
    if (ec)
        throw StoreError(StoreError::Kind::other, "cannot move the damaged database " +
                                                      file.string() + " aside: " + ec.message());
    for (const char* part : {"-wal", "-journal"}) {
        const fs::path side = with_suffix(file, part);
        if (fs::exists(side, ec)) fs::rename(side, with_suffix(target, part), ec);
    }
    fs::remove(with_suffix(file, "-shm"), ec);
    return target;
}

void set_busy_timeout(store::Db& db, const StoreOptions& options) {
    db.exec(("PRAGMA busy_timeout = " + std::to_string(std::max(0, options.busy_timeout_ms))).c_str());
}

void configure(store::Db& db) {
    db.exec("PRAGMA foreign_keys = ON");
    if (db.read_only()) return;
    const auto mode = db.scalar_text("PRAGMA journal_mode = WAL");
    if (!mode || *mode != "wal")
        spdlog::warn("store: {} stays in journal mode {}", db.file().string(), mode.value_or("?"));
    db.exec("PRAGMA synchronous = NORMAL");
}

} // namespace

std::int64_t Store::Impl::now_ms() {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    last_time_ms = std::max<std::int64_t>(now, last_time_ms + 1);
    return last_time_ms;
}

void Store::Impl::open() {
    std::error_code ec;
    if (file.has_parent_path()) {
        // Arbor's own data directory is tightened too; a directory the user chose is theirs.
        const bool own_dir = fs::equivalent(file.parent_path(), data_dir(), ec);
        store::make_private_dir(file.parent_path(), own_dir);
    }
    for (const char* part : {"", "-wal", "-shm", "-journal", ".lock"}) store::restrict_to_owner(file.string() + part);

    const std::string lock_path = file.string() + ".lock";
    lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) lock_fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
    exclusive = lock_fd >= 0 && ::flock(lock_fd, LOCK_EX | LOCK_NB) == 0;
    if (!exclusive)
        spdlog::info("store: {} is open elsewhere; skipping the repairs made at open",
                     file.string());

    // The check runs on a read-only connection: one that can write would checkpoint or
    // delete a WAL it cannot use when it closes, and the WAL belongs with the damaged file.
    if (fs::exists(file, ec) && fs::file_size(file, ec) > 0) {
        std::string problem;
        {
            store::Db check(file, store::Db::Mode::read_only);
            store::Operation op(check, "open the database");
            set_busy_timeout(check, options);
            problem = health_problem(check);
            if (!problem.empty() && !exclusive)
                store::fail(check, StoreError::Kind::corrupt,
                            "the database is damaged (" + problem + ") and in use by another process");
        }
        if (!problem.empty()) {
            report.moved_aside = move_aside(file);
            report.problem = "The database " + file.string() + " could not be read (" + problem +
                             "). It was moved to " + report.moved_aside.string() + ".";
            spdlog::error("store: {}", report.problem);
        }
    }
    store::make_private_file(file);
    db = std::make_unique<store::Db>(file, store::Db::Mode::read_write_create);
    set_busy_timeout(*db, options);
    store::Operation op(*db, "open the database");
    configure(*db);
    report.found_version = store::migrate(*db);
    fts = store::prepare_search_index(*db, options.full_text_search);
    if (!report.moved_aside.empty()) {
        const auto saved = store::salvage(report.moved_aside, *db);
        report.salvaged_conversations = saved.conversations;
        report.salvaged_messages = saved.messages;
        report.problem += saved.conversations == 0
                              ? " Nothing in it could be recovered; a new, empty database was created."
                              : " " + std::to_string(saved.conversations) + " conversation(s) with " +
                                    std::to_string(saved.messages) +
                                    " message(s) were recovered from it into a new database.";
    }

    if (exclusive && !db->read_only()) {
        store::Transaction tx(*db);
        db->query("UPDATE messages SET state = 'stopped' WHERE state = 'streaming'").run();
        report.interrupted_replies = db->changes();
        tx.commit();
        if (report.interrupted_replies > 0)
            spdlog::warn("store: {} reply(ies) were cut off by a crash; kept as stopped",
                         report.interrupted_replies);
    }
    last_time_ms = db->scalar_int("SELECT max(coalesce((SELECT max(updated_at) FROM conversations), 0),"
                                  " coalesce((SELECT max(created_at) FROM messages), 0))");
}

Store::Impl::~Impl() {
    db.reset();
    if (lock_fd >= 0) ::close(lock_fd);
}

fs::path Store::default_path() { return data_dir() / kDefaultFileName; }

Store::Store(fs::path file, StoreOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->file = std::move(file);
    impl_->options = options;
    impl_->open();
}

Store::~Store() = default;

const fs::path& Store::path() const { return impl_->file; }
const StoreOpenReport& Store::open_report() const { return impl_->report; }
bool Store::read_only() const { return impl_->db->read_only(); }
bool Store::full_text_search() const { return impl_->fts; }

} // namespace arbor
