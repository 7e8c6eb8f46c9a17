// A thin RAII layer over the SQLite C API: one connection, cached prepared statements,
// IMMEDIATE transactions, and SQLite result codes turned into StoreError.
#pragma once

#include "arbor/store.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace arbor::store {

class Db;

// A cached prepared statement in use; resets it (and its bindings) when it goes away.
class Query {
public:
    Query(Db& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;
    ~Query();

    // Parameters are 1-based, as in SQL.
    Query& bind(int index, std::int64_t value);
    Query& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Query& bind(int index, double value);
    Query& bind(int index, std::string_view text);
    Query& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Query& bind_blob(int index, std::span<const unsigned char> bytes);
    Query& bind_null(int index);
    template <class T> Query& bind(int index, const std::optional<T>& value) {
        return value ? bind(index, *value) : bind_null(index);
    }

    bool step();  // true while there is a row
    void run();   // a statement that returns no rows

    // Columns are 0-based.
    bool is_null(int column) const;
    std::int64_t int64(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    std::span<const unsigned char> blob(int column) const;
    std::optional<std::int64_t> opt_int64(int column) const;
    std::optional<double> opt_real(int column) const;

private:
    Db* db_;
    sqlite3_stmt* stmt_;
};

class Db {
public:
    enum class Mode { read_write_create, read_write, read_only };

    // Throws StoreError when SQLite cannot open the file at all.
    Db(std::filesystem::path file, Mode mode);
    ~Db();
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    const std::filesystem::path& file() const { return file_; }
    bool read_only() const;
    sqlite3* handle() { return db_; }

    // A prepared statement from the cache, compiled on first use.
    Query query(const char* sql);
    // One or more statements without parameters or rows.
    void exec(const char* sql);
    // The first column of the first row of a one-off statement (text), or empty.
    std::optional<std::string> scalar_text(const char* sql);
    std::int64_t scalar_int(const char* sql);  // 0 for no row or NULL

    std::int64_t last_insert_rowid() const;
    int changes() const;

    // What the current public call is doing, for error messages ("rename conversation").
    const char* operation() const { return operation_; }
    void set_operation(const char* op) { operation_ = op; }

    [[noreturn]] void fail(int rc) const;

private:
    std::filesystem::path file_;
    sqlite3* db_ = nullptr;
    const char* operation_ = nullptr;
    struct StmtDeleter {
        void operator()(sqlite3_stmt* stmt) const;
    };
    std::unordered_map<std::string, std::unique_ptr<sqlite3_stmt, StmtDeleter>> cache_;
};

// Names the public call for error messages while it runs.
class Operation {
public:
    Operation(Db& db, const char* op) : db_(db), previous_(db.operation()) { db.set_operation(op); }
    ~Operation() { db_.set_operation(previous_); }
    Operation(const Operation&) = delete;
    Operation& operator=(const Operation&) = delete;

private:
    Db& db_;
    const char* previous_;
};

// BEGIN IMMEDIATE (takes the write lock up front, so a busy database waits in BEGIN
// instead of failing half-way); rolls back unless commit() ran.
class Transaction {
public:
    explicit Transaction(Db& db);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Db& db_;
    bool done_ = false;
};

// A StoreError for a failure that is not SQLite's (bad id, bad argument).
[[noreturn]] void fail(const Db& db, StoreError::Kind kind, const std::string& what);

StoreError::Kind kind_of(int sqlite_rc);

} // namespace arbor::store
