#include "raw_db.h"

#include <sqlite3.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace arbor::test {

namespace {

struct Conn {
    explicit Conn(const std::filesystem::path& file, bool writable = true) {
        const int flags = writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
        if (sqlite3_open_v2(file.c_str(), &db, flags, nullptr) != SQLITE_OK)
            fail("open");
    }
    ~Conn() { sqlite3_close(db); }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"));
    }
    sqlite3* db = nullptr;
};

template <class F>
void first_row(const std::filesystem::path& file, const std::string& sql, F&& f, bool writable = true) {
    Conn conn(file, writable);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(conn.db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) conn.fail(sql);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> guard(stmt, sqlite3_finalize);
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) f(stmt);
    else if (rc != SQLITE_DONE) conn.fail(sql);
}

} // namespace

std::string raw_scalar(const std::filesystem::path& file, const std::string& sql) {
    std::string out;
    first_row(file, sql, [&](sqlite3_stmt* stmt) {
        if (const auto* text = sqlite3_column_text(stmt, 0)) out = reinterpret_cast<const char*>(text);
    });
    return out;
}

std::vector<unsigned char> raw_blob(const std::filesystem::path& file, const std::string& sql) {
    std::vector<unsigned char> out;
    first_row(file, sql, [&](sqlite3_stmt* stmt) {
        const auto* data = static_cast<const unsigned char*>(sqlite3_column_blob(stmt, 0));
        out.assign(data, data + sqlite3_column_bytes(stmt, 0));
    });
    return out;
}

void raw_exec(const std::filesystem::path& file, const std::string& sql) {
    Conn conn(file);
    if (sqlite3_exec(conn.db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) conn.fail(sql);
}

std::string raw_quick_check(const std::filesystem::path& file) {
    try {
        std::string out;
        first_row(file, "PRAGMA quick_check", [&](sqlite3_stmt* stmt) {
            if (const auto* text = sqlite3_column_text(stmt, 0)) out = reinterpret_cast<const char*>(text);
        }, false);
        return out;
    } catch (const std::runtime_error& e) {
        return e.what();
    }
}

std::vector<char> read_bytes(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace arbor::test
