// The private state of a Store, shared by the translation units that implement it.
#pragma once

#include "arbor/store.h"
#include "store/sqlite_db.h"

#include <cstdint>
#include <memory>
#include <mutex>

namespace arbor {

struct Store::Impl {
    std::filesystem::path file;
    StoreOptions options;
    StoreOpenReport report;
    std::unique_ptr<store::Db> db;
    bool fts = false;
    // flock on <file>.lock: only the holder repairs or replaces the file at open, so a
    // second Arbor process never stops the replies the first one is streaming.
    int lock_fd = -1;
    bool exclusive = false;
    std::int64_t last_time_ms = 0;
    std::mutex mutex;

    // Wall-clock milliseconds, strictly increasing within this Store so that activity
    // order never ties.
    std::int64_t now_ms();
    void open();
    ~Impl();
};

namespace store {

Role role_from(std::string_view text);
// Throws not_found when the conversation does not exist.
void require_conversation(Db& db, ConversationId id);
MessageState state_from(std::string_view text);

} // namespace store

} // namespace arbor

namespace arbor::store {

// What every public Store call starts with: the lock, and the call's name for errors.
struct Call {
    Call(Store::Impl& impl, const char* operation)
        : lock(impl.mutex), db(*impl.db), op(*impl.db, operation) {}
    std::lock_guard<std::mutex> lock;
    Db& db;
    Operation op;
};

} // namespace arbor::store
