#include "store/salvage.h"

#include "store/sqlite_db.h"

#include <sqlite3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace arbor::store {
namespace {

struct StmtCloser {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtCloser>;

Stmt prepare(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) return nullptr;
    return Stmt(raw);
}

std::vector<std::string> columns_of(sqlite3* db, const std::string& table) {
    std::vector<std::string> out;
    Stmt s = prepare(db, "PRAGMA table_info(\"" + table + "\")");
    while (s && sqlite3_step(s.get()) == SQLITE_ROW)
        out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1)));
    return out;
}

// Copies rows of one table from `from` to `to`: the columns both have, in the order of
// `key` (rowid for tables with one). `skip_damage`: seek past unreadable ranges of a
// rowid table instead of stopping at the first.
class TableCopy {
public:
    TableCopy(sqlite3* from, sqlite3* to, const std::string& table, const std::string& key, bool skip_damage)
        : skip_damage_(skip_damage) {
        const auto wanted = columns_of(to, table);
        const auto present = columns_of(from, table);
        std::string list, params;
        for (const auto& c : wanted) {
            if (std::find(present.begin(), present.end(), c) == present.end()) continue;
            list += (list.empty() ? "\"" : ", \"") + c + "\"";
            params += params.empty() ? "?" : ", ?";
            ++n_columns_;
        }
        if (n_columns_ == 0) return;
        const std::string where = skip_damage ? " WHERE " + key + " > ?1 ORDER BY " + key : " ORDER BY " + key;
        read_ = prepare(from, "SELECT " + key + ", " + list + " FROM \"" + table + "\"" + where);
        probe_ = skip_damage ? prepare(from, "SELECT " + key + " FROM \"" + table + "\" WHERE " + key + " > ?1 ORDER BY " +
                                                 key + " LIMIT 1")
                             : nullptr;
        write_ = prepare(to, "INSERT INTO \"" + table + "\" (" + list + ") VALUES (" + params + ")");
    }

    // Returns the rows copied; adds rows the target refused to `refused`.
    int run(int& refused) {
        if (!read_ || !write_ || (skip_damage_ && !probe_)) return 0;
        int copied = 0;
        int64_t after = 0;  // the tables' ids start at 1
        for (;;) {
            const int64_t start = after;
            sqlite3_reset(read_.get());
            if (skip_damage_) sqlite3_bind_int64(read_.get(), 1, after);
            int rc;
            while ((rc = sqlite3_step(read_.get())) == SQLITE_ROW) {
                if (skip_damage_) after = sqlite3_column_int64(read_.get(), 0);
                sqlite3_reset(write_.get());
                for (int i = 0; i < n_columns_; ++i)
                    sqlite3_bind_value(write_.get(), i + 1, sqlite3_column_value(read_.get(), i + 1));
                if (sqlite3_step(write_.get()) == SQLITE_DONE) ++copied;
                else ++refused;
            }
            if (rc == SQLITE_DONE || !skip_damage_) return copied;
            const auto next = next_readable(after);
            if (!next) return copied;
            // Resume at that row; should the read fail there again at once, pass it.
            after = *next - 1 > start ? *next - 1 : std::max(after, *next);
        }
    }

private:
    enum class Probe { row, end, damaged };
    Probe probe(int64_t after, int64_t* found) {
        sqlite3_reset(probe_.get());
        sqlite3_bind_int64(probe_.get(), 1, after);
        const int rc = sqlite3_step(probe_.get());
        if (rc == SQLITE_ROW) *found = sqlite3_column_int64(probe_.get(), 0);
        return rc == SQLITE_ROW ? Probe::row : rc == SQLITE_DONE ? Probe::end : Probe::damaged;
    }

    // The first readable key past the damaged range that follows `after`: ever larger
    // steps until a seek lands beyond the damage, then a bisection back to its edge.
    std::optional<int64_t> next_readable(int64_t after) {
        int64_t found = 0, failed = after;
        for (int64_t step = 1;; step *= 2) {
            if (after > std::numeric_limits<int64_t>::max() - step) return std::nullopt;
            const Probe p = probe(after + step, &found);
            if (p == Probe::end) return std::nullopt;
            if (p == Probe::row) {
                int64_t ok = after + step;
                while (ok - failed > 1) {
                    const int64_t mid = failed + (ok - failed) / 2;
                    int64_t at = 0;
                    const Probe q = probe(mid, &at);
                    if (q == Probe::damaged) {
                        failed = mid;
                    } else {
                        ok = mid;
                        if (q == Probe::row) found = at;
                    }
                }
                return found;
            }
            failed = after + step;
            if (step > (int64_t(1) << 61)) return std::nullopt;
        }
    }

    bool skip_damage_;
    int n_columns_ = 0;
    Stmt read_, probe_, write_;
};

// The size the header of a database file gives (page size times page count; 0 when the
// header is unreadable).
std::uintmax_t size_in_header(const std::filesystem::path& file) {
    unsigned char h[100];
    std::ifstream in(file, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(h), sizeof h)) return 0;
    if (std::memcmp(h, "SQLite format 3", 16) != 0) return 0;
    std::uintmax_t page = (std::uintmax_t(h[16]) << 8) | h[17];
    if (page == 1) page = 65536;
    const std::uintmax_t pages = (std::uintmax_t(h[28]) << 24) | (h[29] << 16) | (h[30] << 8) | h[31];
    return page * pages;
}

// SQLite refuses a whole file shorter than its header says (a truncated copy), though
// most of its pages are fine. Such a file is read from a copy padded with zeros to
// that size: the missing pages then read as damaged ones, which the copy steps over.
// Returns the file to read, and the copy to remove after (else empty).
std::pair<std::filesystem::path, std::filesystem::path> readable_copy(const std::filesystem::path& damaged) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto size = fs::file_size(damaged, ec);
    const auto wanted = size_in_header(damaged);
    if (ec || wanted <= size || wanted > (std::uintmax_t(1) << 36)) return {damaged, {}};
    const fs::path copy = damaged.string() + ".salvage";
    if (!fs::copy_file(damaged, copy, fs::copy_options::overwrite_existing, ec)) return {damaged, {}};
    fs::resize_file(copy, wanted, ec);
    if (ec) {
        fs::remove(copy, ec);
        return {damaged, {}};
    }
    return {copy, copy};
}

} // namespace

SalvageCounts salvage(const std::filesystem::path& damaged, Db& target) {
    SalvageCounts counts;
    const auto [source, temporary] = readable_copy(damaged);
    sqlite3* from = nullptr;
    if (sqlite3_open_v2(source.c_str(), &from, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        sqlite3_close(from);
        return counts;
    }
    {
        Transaction tx(target);
        counts.conversations = TableCopy(from, target.handle(), "conversations", "rowid", true).run(counts.refused);
        counts.messages = TableCopy(from, target.handle(), "messages", "rowid", true).run(counts.refused);
        counts.settings = TableCopy(from, target.handle(), "app_settings", "key", false).run(counts.refused);
        tx.commit();
    }
    sqlite3_close(from);
    // A read-only connection may have made a shared-memory index beside a WAL; only the
    // damaged file and its WAL are evidence.
    std::error_code ec;
    std::filesystem::remove(source.string() + "-shm", ec);
    if (!temporary.empty()) std::filesystem::remove(temporary, ec);
    spdlog::warn("store: salvaged {} conversation(s), {} message(s) and {} setting(s) from {} ({} row(s) refused)",
                 counts.conversations, counts.messages, counts.settings, damaged.string(), counts.refused);
    return counts;
}

} // namespace arbor::store
