// Salvage of a damaged database: after the damaged file is moved aside and a new one
// created, every conversation, message and app setting that can still be read from the
// old file is copied into the new one, row by row through the SQLite API. Rows on
// unreadable pages are stepped over (the scan seeks past the damaged range and goes
// on); a row the new schema refuses (a message whose conversation or parent was lost,
// a value garbled beyond its CHECK) is left out, so the tree stays whole. The old
// file is opened read-only and left exactly as it was.
#pragma once

#include <filesystem>

namespace arbor::store {

class Db;

struct SalvageCounts {
    int conversations = 0;
    int messages = 0;
    int settings = 0;
    int refused = 0;  // rows read but not accepted by the new database
};

// Copies what it can from `damaged` into `target` (migrated to the current schema) in
// one transaction. Never throws for the damaged file's sake: what cannot be read is
// simply not copied.
SalvageCounts salvage(const std::filesystem::path& damaged, Db& target);

} // namespace arbor::store
