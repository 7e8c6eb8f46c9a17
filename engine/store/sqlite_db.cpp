#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <spdlog/spdlog.h>

#include <cerrno>

namespace arbor::store {

StoreError::Kind kind_of(int rc) {
    switch (rc & 0xff) {
    case SQLITE_FULL: return StoreError::Kind::disk_full;
    case SQLITE_READONLY: return StoreError::Kind::read_only;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return StoreError::Kind::busy;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return StoreError::Kind::corrupt;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG: return StoreError::Kind::invalid;
    default: return StoreError::Kind::other;
    }
}

namespace {

const char* hint_for(int rc) {
    switch (rc & 0xff) {
    case SQLITE_FULL: return "the disk is full; free some space and try again";
    case SQLITE_READONLY: return "the database file or its directory is read-only";
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return "another process holds the database lock";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return "the database file is damaged";
    case SQLITE_IOERR: return "the file system reported an error";
    case SQLITE_CANTOPEN: return "check that the file and its directory are accessible";
    default: return nullptr;
    }
}

std::string describe(const std::filesystem::path& file, const char* operation,
                     const std::string& what) {
    std::string message = operation ? std::string("cannot ") + operation : "database error";
    message += " (" + file.string() + "): " + what;
    return message;
}

} // namespace

void fail(const Db& db, StoreError::Kind kind, const std::string& what) {
    throw StoreError(kind, describe(db.file(), db.operation(), what));
}

void Db::fail(int rc) const {
    std::string what = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    StoreError::Kind kind = kind_of(rc);
    const char* hint = hint_for(rc);
    // SQLite reports SQLITE_FULL only for ENOSPC on a partial write; a quota or file
    // size limit, or a write that failed outright, comes back as an I/O error.
    const int sys = db_ ? sqlite3_system_errno(db_) : 0;
    if ((rc & 0xff) == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT || sys == EFBIG)) {
        kind = StoreError::Kind::disk_full;
        hint = "no space left for the database (disk full, quota or file size limit)";
    }
    if (hint) what += std::string(" - ") + hint;
    throw StoreError(kind, describe(file_, operation_, what));
}

void Db::StmtDeleter::operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }

Db::Db(std::filesystem::path file, Mode mode) : file_(std::move(file)) {
    int flags = SQLITE_OPEN_NOMUTEX;
    switch (mode) {
    case Mode::read_write_create: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case Mode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
    case Mode::read_only: flags |= SQLITE_OPEN_READONLY; break;
    }
    const int rc = sqlite3_open_v2(file_.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string what = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        if (const char* hint = hint_for(rc)) what += std::string(" - ") + hint;
        throw StoreError(kind_of(rc), describe(file_, "open the database", what));
    }
    sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
    cache_.clear();
    if (sqlite3_close(db_) != SQLITE_OK)
        spdlog::warn("store: closing {} failed: {}", file_.string(), sqlite3_errmsg(db_));
}

bool Db::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

Query Db::query(const char* sql) {
    auto it = cache_.find(sql);
    if (it == cache_.end()) {
        sqlite3_stmt* stmt = nullptr;
        const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
        if (rc != SQLITE_OK) fail(rc);
        it = cache_.emplace(sql, std::unique_ptr<sqlite3_stmt, StmtDeleter>(stmt)).first;
    }
    return Query(*this, it->second.get());
}

void Db::exec(const char* sql) {
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc);
}

std::optional<std::string> Db::scalar_text(const char* sql) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &raw, nullptr);
    if (rc != SQLITE_OK) fail(rc);
    std::unique_ptr<sqlite3_stmt, StmtDeleter> stmt(raw);
    rc = sqlite3_step(raw);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) fail(rc);
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, 0));
    return std::string(text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(raw, 0)));
}

std::int64_t Db::scalar_int(const char* sql) {
    const auto text = scalar_text(sql);
    return text && !text->empty() ? std::stoll(*text) : 0;
}

std::int64_t Db::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Db::changes() const { return sqlite3_changes(db_); }

Query::~Query() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
}

Query& Query::bind(int index, std::int64_t value) {
    if (const int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK) db_->fail(rc);
    return *this;
}

Query& Query::bind(int index, double value) {
    if (const int rc = sqlite3_bind_double(stmt_, index, value); rc != SQLITE_OK) db_->fail(rc);
    return *this;
}

Query& Query::bind(int index, std::string_view text) {
    const int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                                       SQLITE_UTF8);
    if (rc != SQLITE_OK) db_->fail(rc);
    return *this;
}

Query& Query::bind_blob(int index, std::span<const unsigned char> bytes) {
    // A zero-length blob, not NULL, for an empty span.
    static const unsigned char empty = 0;
    const void* data = bytes.empty() ? &empty : bytes.data();
    const int rc = sqlite3_bind_blob64(stmt_, index, data, bytes.size(), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) db_->fail(rc);
    return *this;
}

Query& Query::bind_null(int index) {
    if (const int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK) db_->fail(rc);
    return *this;
}

bool Query::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_->fail(rc);
}

void Query::run() {
    while (step()) {
    }
}

bool Query::is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
std::int64_t Query::int64(int column) const { return sqlite3_column_int64(stmt_, column); }
double Query::real(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Query::text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return std::string(text ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::span<const unsigned char> Query::blob(int column) const {
    const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, column));
    const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
    return data ? std::span<const unsigned char>(data, size) : std::span<const unsigned char>();
}

std::optional<std::int64_t> Query::opt_int64(int column) const {
    if (is_null(column)) return std::nullopt;
    return int64(column);
}

std::optional<double> Query::opt_real(int column) const {
    if (is_null(column)) return std::nullopt;
    return real(column);
}

Transaction::Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
    if (done_ || sqlite3_get_autocommit(db_.handle())) return;
    // SQLite may already have rolled back after SQLITE_FULL or an I/O error; the
    // autocommit check above covers that, and a failing ROLLBACK has nothing to undo.
    if (sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr) != SQLITE_OK)
        spdlog::warn("store: rollback failed: {}", sqlite3_errmsg(db_.handle()));
}

void Transaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

} // namespace arbor::store
