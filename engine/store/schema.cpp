#include "store/schema.h"

#include <sqlite3.h>

#include <spdlog/spdlog.h>

#include <string>

namespace arbor::store {

namespace {

// Migration N takes the schema from version N-1 to N. Released steps never change:
// tests/data/store/arbor-v1.db was written with step 1 as it is here.
constexpr const char* kMigrations[] = {
    // 1: conversations with their settings, the message tree, app settings.
    R"sql(
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    temperature REAL,
    top_p REAL,
    top_k INTEGER,
    max_tokens INTEGER
);
CREATE INDEX conversations_by_activity ON conversations (updated_at DESC, id DESC);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES messages (id) ON DELETE CASCADE,
    role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
    text TEXT NOT NULL DEFAULT '',
    token_ids BLOB NOT NULL DEFAULT x'',
    created_at INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'complete'
        CHECK (state IN ('complete', 'streaming', 'stopped', 'error'))
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, parent_id);
CREATE INDEX messages_by_parent ON messages (parent_id);
CREATE INDEX messages_streaming ON messages (state) WHERE state = 'streaming';
CREATE TABLE app_settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
)sql",
    // 2: generation stats of each message, the open tabs.
    R"sql(
ALTER TABLE messages ADD COLUMN prompt_tokens INTEGER;
ALTER TABLE messages ADD COLUMN cached_tokens INTEGER;
ALTER TABLE messages ADD COLUMN ttft_ms REAL;
ALTER TABLE messages ADD COLUMN tokens_per_second REAL;
ALTER TABLE messages ADD COLUMN finish_reason TEXT NOT NULL DEFAULT '';
CREATE TABLE open_tabs (
    position INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    leaf_id INTEGER REFERENCES messages (id) ON DELETE SET NULL,
    active INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1))
);
)sql",
    // 3: more sampler settings per conversation. Stop strings are joined by U+001F
    // (unit separator), which no stop string may contain.
    R"sql(
ALTER TABLE conversations ADD COLUMN repetition_penalty REAL;
ALTER TABLE conversations ADD COLUMN min_p REAL;
ALTER TABLE conversations ADD COLUMN seed INTEGER;
ALTER TABLE conversations ADD COLUMN stop_strings TEXT NOT NULL DEFAULT '';
)sql",
    // 4: of a reply's cached prompt tokens, how many were read from the KV disk tier.
    R"sql(
ALTER TABLE messages ADD COLUMN disk_tokens INTEGER;
)sql",
    // 5: how many of the oldest messages a reply's prompt left out to fit the context.
    R"sql(
ALTER TABLE messages ADD COLUMN omitted_messages INTEGER;
)sql",
    // 6: the model each conversation last used (a local model file's path; '': unknown).
    R"sql(
ALTER TABLE conversations ADD COLUMN model TEXT NOT NULL DEFAULT '';
)sql",
};

constexpr int kLatest = static_cast<int>(std::size(kMigrations));

// Standalone FTS5 tables keyed by the rowid of the row they index. Messages are indexed
// once they stop streaming, so appending a piece never touches the index.
constexpr const char* kSearchTables = R"sql(
CREATE VIRTUAL TABLE IF NOT EXISTS conversation_fts
    USING fts5 (title, tokenize = 'unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS message_fts
    USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
)sql";

constexpr const char* kSearchTriggers = R"sql(
CREATE TRIGGER conversation_fts_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversation_fts (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER conversation_fts_update AFTER UPDATE OF title ON conversations BEGIN
    DELETE FROM conversation_fts WHERE rowid = old.id;
    INSERT INTO conversation_fts (rowid, title) VALUES (new.id, new.title);
END;
CREATE TRIGGER conversation_fts_delete AFTER DELETE ON conversations BEGIN
    DELETE FROM conversation_fts WHERE rowid = old.id;
END;
CREATE TRIGGER message_fts_insert AFTER INSERT ON messages
WHEN new.state <> 'streaming' BEGIN
    INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER message_fts_update AFTER UPDATE OF text, state ON messages
WHEN new.state <> 'streaming' BEGIN
    DELETE FROM message_fts WHERE rowid = old.id;
    INSERT INTO message_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER message_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM message_fts WHERE rowid = old.id;
END;
)sql";

constexpr const char* kDropSearchTriggers = R"sql(
DROP TRIGGER IF EXISTS conversation_fts_insert;
DROP TRIGGER IF EXISTS conversation_fts_update;
DROP TRIGGER IF EXISTS conversation_fts_delete;
DROP TRIGGER IF EXISTS message_fts_insert;
DROP TRIGGER IF EXISTS message_fts_update;
DROP TRIGGER IF EXISTS message_fts_delete;
)sql";

constexpr const char* kRebuildSearchIndex = R"sql(
DELETE FROM conversation_fts;
DELETE FROM message_fts;
INSERT INTO conversation_fts (rowid, title) SELECT id, title FROM conversations;
INSERT INTO message_fts (rowid, text) SELECT id, text FROM messages WHERE state <> 'streaming';
)sql";

bool search_triggers_exist(Db& db) {
    return db.scalar_int("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN "
                         "('conversation_fts_insert', 'conversation_fts_update', "
                         "'conversation_fts_delete', 'message_fts_insert', "
                         "'message_fts_update', 'message_fts_delete')") == 6;
}

} // namespace

static_assert(kLatest == Store::kSchemaVersion, "one migration per schema version");

int schema_version(Db& db) { return static_cast<int>(db.scalar_int("PRAGMA user_version")); }

int migrate(Db& db) {
    const int found = schema_version(db);
    if (found > kLatest)
        fail(db, StoreError::Kind::invalid,
             "the database has schema version " + std::to_string(found) +
                 ", newer than this version of Arbor supports (" + std::to_string(kLatest) +
                 "); use a newer Arbor");
    if (found == kLatest) return found;
    if (db.read_only())
        fail(db, StoreError::Kind::read_only,
             "the database has schema version " + std::to_string(found) +
                 " and needs an upgrade, but the file is read-only");
    for (;;) {
        // The version is read under the write lock: another process may have migrated
        // the file since it was read above.
        Transaction tx(db);
        const int version = schema_version(db);
        if (version >= kLatest) break;
        db.exec(kMigrations[version]);
        // user_version lives in the header page, so it commits with the step.
        db.exec(("PRAGMA user_version = " + std::to_string(version + 1)).c_str());
        tx.commit();
        if (found > 0)
            spdlog::info("store: migrated {} to schema {}", db.file().string(), version + 1);
    }
    return found;
}

bool fts5_available() { return sqlite3_compileoption_used("ENABLE_FTS5") == 1; }

bool prepare_search_index(Db& db, bool use_fts) {
    const bool want = use_fts && fts5_available();
    const bool ready = search_triggers_exist(db);
    if (db.read_only()) return want && ready;
    if (!want) {
        // Without the triggers writes work without FTS5; the stale index is rebuilt
        // when a later open has FTS5 again (it finds the triggers missing).
        if (ready) {
            Transaction tx(db);
            db.exec(kDropSearchTriggers);
            tx.commit();
        }
        return false;
    }
    if (ready) return true;
    Transaction tx(db);
    db.exec(kSearchTables);
    db.exec(kDropSearchTriggers);
    db.exec(kSearchTriggers);
    db.exec(kRebuildSearchIndex);
    tx.commit();
    return true;
}

} // namespace arbor::store
