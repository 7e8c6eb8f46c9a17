// The message tree and streaming replies.
#include "store/store_impl.h"
#include "store/token_blob.h"

namespace arbor {

using store::Call;

namespace {

#define ARBOR_MESSAGE_COLUMNS                                                              \
    "m.id, m.conversation_id, m.parent_id, m.role, m.text, m.token_ids, m.created_at,"     \
    " m.state, m.prompt_tokens, m.cached_tokens, m.ttft_ms, m.tokens_per_second,"          \
    " m.finish_reason, m.disk_tokens, m.omitted_messages"

Message read_message(const store::Db& db, const store::Query& q) {
    Message m;
    m.id = q.int64(0);
    m.conversation_id = q.int64(1);
    m.parent_id = q.opt_int64(2);
    m.role = store::role_from(q.text(3));
    m.text = q.text(4);
    if (!store::decode_tokens(q.blob(5), m.token_ids))
        store::fail(db, StoreError::Kind::corrupt,
                    "message " + std::to_string(m.id) + " has a malformed token id list");
    m.created_at = q.int64(6);
    m.state = store::state_from(q.text(7));
    if (auto v = q.opt_int64(8)) m.stats.prompt_tokens = static_cast<int>(*v);
    if (auto v = q.opt_int64(9)) m.stats.cached_tokens = static_cast<int>(*v);
    m.stats.ttft_ms = q.opt_real(10);
    m.stats.tokens_per_second = q.opt_real(11);
    m.stats.finish_reason = q.text(12);
    if (auto v = q.opt_int64(13)) m.stats.disk_tokens = static_cast<int>(*v);
    if (auto v = q.opt_int64(14)) m.stats.omitted_messages = static_cast<int>(*v);
    return m;
}

std::vector<Message> read_all(const store::Db& db, store::Query& q) {
    std::vector<Message> out;
    while (q.step()) out.push_back(read_message(db, q));
    return out;
}

// Why a message that was expected to be streaming could not be changed.
[[noreturn]] void fail_not_streaming(store::Db& db, MessageId id) {
    auto q = db.query("SELECT state FROM messages WHERE id = ?1");
    q.bind(1, id);
    if (!q.step()) store::fail(db, StoreError::Kind::not_found, "no message " + std::to_string(id));
    store::fail(db, StoreError::Kind::invalid,
                "message " + std::to_string(id) + " is not streaming (it is " + q.text(0) + ")");
}

void touch_conversation(store::Db& db, ConversationId id, std::int64_t now) {
    db.query("UPDATE conversations SET updated_at = ?2 WHERE id = ?1").bind(1, id).bind(2, now).run();
}

} // namespace

MessageId Store::add_message(ConversationId conversation, std::optional<MessageId> parent,
                             Role role, std::string_view text,
                             std::span<const std::int32_t> token_ids, MessageState state) {
    Call call(*impl_, "add a message");
    store::Transaction tx(call.db);
    store::require_conversation(call.db, conversation);
    if (parent) {
        auto p = call.db.query("SELECT conversation_id FROM messages WHERE id = ?1");
        p.bind(1, *parent);
        if (!p.step())
            store::fail(call.db, StoreError::Kind::not_found,
                        "no parent message " + std::to_string(*parent));
        if (p.int64(0) != conversation)
            store::fail(call.db, StoreError::Kind::invalid,
                        "parent message " + std::to_string(*parent) + " is in conversation " +
                            std::to_string(p.int64(0)) + ", not " + std::to_string(conversation));
    }
    const std::int64_t now = impl_->now_ms();
    const auto blob = store::encode_tokens(token_ids);
    auto q = call.db.query("INSERT INTO messages (conversation_id, parent_id, role, text,"
                           " token_ids, created_at, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    q.bind(1, conversation).bind(2, parent).bind(3, to_string(role)).bind(4, text);
    q.bind_blob(5, blob).bind(6, now).bind(7, to_string(state)).run();
    const MessageId id = call.db.last_insert_rowid();
    touch_conversation(call.db, conversation, now);
    tx.commit();
    return id;
}

Message Store::message(MessageId id) const {
    Call call(*impl_, "read the message");
    auto q = call.db.query("SELECT " ARBOR_MESSAGE_COLUMNS " FROM messages m WHERE m.id = ?1");
    q.bind(1, id);
    if (!q.step())
        store::fail(call.db, StoreError::Kind::not_found, "no message " + std::to_string(id));
    return read_message(call.db, q);
}

std::vector<Message> Store::children(MessageId parent) const {
    Call call(*impl_, "read the replies to a message");
    auto q = call.db.query("SELECT " ARBOR_MESSAGE_COLUMNS
                           " FROM messages m WHERE m.parent_id = ?1 ORDER BY m.id");
    q.bind(1, parent);
    return read_all(call.db, q);
}

std::vector<Message> Store::roots(ConversationId conversation) const {
    Call call(*impl_, "read the first messages");
    auto q = call.db.query("SELECT " ARBOR_MESSAGE_COLUMNS " FROM messages m"
                           " WHERE m.conversation_id = ?1 AND m.parent_id IS NULL ORDER BY m.id");
    q.bind(1, conversation);
    return read_all(call.db, q);
}

std::vector<Message> Store::path(MessageId leaf) const {
    Call call(*impl_, "read the conversation path");
    auto q = call.db.query("WITH RECURSIVE chain (id, depth) AS ("
                           " SELECT ?1, 0"
                           " UNION ALL SELECT p.parent_id, chain.depth + 1 FROM messages p"
                           " JOIN chain ON p.id = chain.id WHERE p.parent_id IS NOT NULL)"
                           " SELECT " ARBOR_MESSAGE_COLUMNS
                           " FROM chain JOIN messages m ON m.id = chain.id ORDER BY chain.depth DESC");
    q.bind(1, leaf);
    auto out = read_all(call.db, q);
    if (out.empty())
        store::fail(call.db, StoreError::Kind::not_found, "no message " + std::to_string(leaf));
    return out;
}

std::optional<MessageId> Store::latest_leaf(ConversationId conversation) const {
    Call call(*impl_, "find the latest message");
    // Ids grow with every insert and a child is inserted after its parent, so the
    // highest id has no children.
    auto q = call.db.query("SELECT max(id) FROM messages WHERE conversation_id = ?1");
    q.bind(1, conversation);
    q.step();
    return q.opt_int64(0);
}

void Store::append_to_message(MessageId id, std::string_view text_piece,
                              std::span<const std::int32_t> token_ids) {
    Call call(*impl_, "save the streamed reply");
    const auto blob = store::encode_tokens(token_ids);
    // One UPDATE, its own transaction: SQLite's || joins the blobs byte for byte (the
    // database is UTF-8, so nothing is transcoded) and the CAST keeps the result a blob.
    auto q = call.db.query("UPDATE messages SET text = text || ?2,"
                           " token_ids = CAST(token_ids || ?3 AS BLOB)"
                           " WHERE id = ?1 AND state = 'streaming'");
    q.bind(1, id).bind(2, text_piece).bind_blob(3, blob).run();
    if (call.db.changes() == 0) fail_not_streaming(call.db, id);
}

void Store::resume_message(MessageId id) {
    Call call(*impl_, "continue the reply");
    store::Transaction tx(call.db);
    auto q = call.db.query("UPDATE messages SET state = 'streaming' WHERE id = ?1 AND role = 'assistant'"
                           " AND state IN ('complete', 'stopped')"
                           " AND NOT EXISTS (SELECT 1 FROM messages WHERE parent_id = ?1)");
    q.bind(1, id).run();
    if (call.db.changes() == 0) {
        auto m = call.db.query("SELECT 1 FROM messages WHERE id = ?1");
        m.bind(1, id);
        if (!m.step()) store::fail(call.db, StoreError::Kind::not_found, "no message " + std::to_string(id));
        store::fail(call.db, StoreError::Kind::invalid,
                    "message " + std::to_string(id) + " is not a finished reply without replies below it");
    }
    tx.commit();
}

void Store::finish_message(MessageId id, MessageState state, const MessageStats& stats) {
    Call call(*impl_, "finish the streamed reply");
    if (state == MessageState::streaming)
        store::fail(call.db, StoreError::Kind::invalid, "a finished reply cannot stay streaming");
    store::Transaction tx(call.db);
    auto q = call.db.query("UPDATE messages SET state = ?2, prompt_tokens = ?3, cached_tokens = ?4,"
                           " ttft_ms = ?5, tokens_per_second = ?6, finish_reason = ?7, disk_tokens = ?8,"
                           " omitted_messages = ?9"
                           " WHERE id = ?1 AND state = 'streaming'"
                           " RETURNING conversation_id");
    q.bind(1, id).bind(2, to_string(state)).bind(3, stats.prompt_tokens);
    q.bind(4, stats.cached_tokens).bind(5, stats.ttft_ms).bind(6, stats.tokens_per_second);
    q.bind(7, stats.finish_reason).bind(8, stats.disk_tokens).bind(9, stats.omitted_messages);
    if (!q.step()) fail_not_streaming(call.db, id);
    const ConversationId conversation = q.int64(0);
    q.run();
    touch_conversation(call.db, conversation, impl_->now_ms());
    tx.commit();
}

} // namespace arbor
