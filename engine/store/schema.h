// The database schema: numbered forward migrations (PRAGMA user_version) and the
// full-text search index, which is kept outside the numbering because it depends on the
// SQLite build (FTS5) rather than on the data.
#pragma once

#include "store/sqlite_db.h"

namespace arbor::store {

int schema_version(Db& db);

// Runs every migration after the file's version up to Store::kSchemaVersion, each in its own transaction, and
// returns the version found. Throws when the file is newer than this build, or
// read-only and behind.
int migrate(Db& db);

bool fts5_available();

// Makes the FTS5 index and its triggers exist and match the tables (rebuilding it when
// the triggers were missing), or with use_fts off drops the triggers so that writes do
// not need FTS5. Returns whether searches can use the index.
bool prepare_search_index(Db& db, bool use_fts);

} // namespace arbor::store
