// Conversations and their settings, app settings, open tabs.
#include "store/store_impl.h"

#include <cmath>

namespace arbor {

using store::Call;

namespace {

constexpr char kStopStringSeparator = '\x1f';

// What read_conversation reads, in its order.
#define ARBOR_CONVERSATION_COLUMNS                                                              \
    "id, title, created_at, updated_at, system_prompt, temperature, top_p, top_k, max_tokens," \
    " repetition_penalty, min_p, seed, stop_strings, model"

std::vector<std::string> split_stop_strings(const std::string& joined) {
    std::vector<std::string> out;
    if (joined.empty()) return out;
    size_t start = 0;
    for (;;) {
        const size_t end = joined.find(kStopStringSeparator, start);
        out.push_back(joined.substr(start, end == std::string::npos ? std::string::npos : end - start));
        if (end == std::string::npos) return out;
        start = end + 1;
    }
}

std::string join_stop_strings(const std::vector<std::string>& strings) {
    std::string out;
    for (const auto& s : strings) {
        if (!out.empty()) out += kStopStringSeparator;
        out += s;
    }
    return out;
}

// Columns: ARBOR_CONVERSATION_COLUMNS.
Conversation read_conversation(const store::Query& q) {
    Conversation c;
    c.id = q.int64(0);
    c.title = q.text(1);
    c.created_at = q.int64(2);
    c.updated_at = q.int64(3);
    c.settings.system_prompt = q.text(4);
    c.settings.temperature = q.opt_real(5);
    c.settings.top_p = q.opt_real(6);
    if (auto k = q.opt_int64(7)) c.settings.top_k = static_cast<int>(*k);
    if (auto m = q.opt_int64(8)) c.settings.max_tokens = static_cast<int>(*m);
    c.settings.repetition_penalty = q.opt_real(9);
    c.settings.min_p = q.opt_real(10);
    c.settings.seed = q.opt_int64(11);
    c.settings.stop_strings = split_stop_strings(q.text(12));
    c.model = q.text(13);
    return c;
}

void check_settings(const store::Db& db, const ConversationSettings& s) {
    auto bad = [&](const char* what) { store::fail(db, StoreError::Kind::invalid, what); };
    if (s.temperature && !(std::isfinite(*s.temperature) && *s.temperature >= 0))
        bad("temperature must be a finite number >= 0");
    if (s.top_p && !(*s.top_p > 0 && *s.top_p <= 1)) bad("top_p must be in (0, 1]");
    if (s.top_k && *s.top_k < 0) bad("top_k must be >= 0");
    if (s.max_tokens && *s.max_tokens <= 0) bad("max_tokens must be > 0");
    if (s.repetition_penalty && !(std::isfinite(*s.repetition_penalty) && *s.repetition_penalty > 0))
        bad("repetition_penalty must be a finite number > 0");
    if (s.min_p && !(*s.min_p >= 0 && *s.min_p <= 1)) bad("min_p must be in [0, 1]");
    if (s.seed && *s.seed < 0) bad("seed must be >= 0");
    for (const auto& stop : s.stop_strings)
        if (stop.empty() || stop.find(kStopStringSeparator) != std::string::npos)
            bad("a stop string must be non-empty and must not contain U+001F");
}

} // namespace

std::string_view to_string(Role role) {
    switch (role) {
    case Role::System: return "system";
    case Role::User: return "user";
    case Role::Assistant: return "assistant";
    }
    return "user";
}

std::string_view to_string(MessageState state) {
    switch (state) {
    case MessageState::complete: return "complete";
    case MessageState::streaming: return "streaming";
    case MessageState::stopped: return "stopped";
    case MessageState::error: return "error";
    }
    return "complete";
}

namespace store {

void require_conversation(Db& db, ConversationId id) {
    auto q = db.query("SELECT 1 FROM conversations WHERE id = ?1");
    q.bind(1, id);
    if (!q.step()) fail(db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
}

// The schema's CHECK constraints limit the stored values to these names.
Role role_from(std::string_view text) {
    if (text == "system") return Role::System;
    if (text == "assistant") return Role::Assistant;
    return Role::User;
}

MessageState state_from(std::string_view text) {
    if (text == "streaming") return MessageState::streaming;
    if (text == "stopped") return MessageState::stopped;
    if (text == "error") return MessageState::error;
    return MessageState::complete;
}

} // namespace store

ConversationId Store::create_conversation(std::string_view title,
                                          const ConversationSettings& settings) {
    Call call(*impl_, "create a conversation");
    check_settings(call.db, settings);
    const std::int64_t now = impl_->now_ms();
    store::Transaction tx(call.db);
    auto q = call.db.query("INSERT INTO conversations (title, created_at, updated_at, system_prompt,"
                           " temperature, top_p, top_k, max_tokens, repetition_penalty, min_p, seed,"
                           " stop_strings) VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    q.bind(1, title).bind(2, now).bind(3, settings.system_prompt);
    q.bind(4, settings.temperature).bind(5, settings.top_p).bind(6, settings.top_k);
    q.bind(7, settings.max_tokens).bind(8, settings.repetition_penalty).bind(9, settings.min_p);
    q.bind(10, settings.seed).bind(11, join_stop_strings(settings.stop_strings)).run();
    const ConversationId id = call.db.last_insert_rowid();
    tx.commit();
    return id;
}

void Store::rename_conversation(ConversationId id, std::string_view title) {
    Call call(*impl_, "rename the conversation");
    store::Transaction tx(call.db);
    auto q = call.db.query("UPDATE conversations SET title = ?2 WHERE id = ?1");
    q.bind(1, id).bind(2, title).run();
    if (call.db.changes() == 0)
        store::fail(call.db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
    tx.commit();
}

void Store::delete_conversation(ConversationId id) {
    Call call(*impl_, "delete the conversation");
    store::Transaction tx(call.db);
    // Messages and tabs go with it (ON DELETE CASCADE).
    auto q = call.db.query("DELETE FROM conversations WHERE id = ?1");
    q.bind(1, id).run();
    if (call.db.changes() == 0)
        store::fail(call.db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
    tx.commit();
}

Conversation Store::conversation(ConversationId id) const {
    Call call(*impl_, "read the conversation");
    auto q = call.db.query("SELECT " ARBOR_CONVERSATION_COLUMNS " FROM conversations WHERE id = ?1");
    q.bind(1, id);
    if (!q.step())
        store::fail(call.db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
    return read_conversation(q);
}

std::vector<Conversation> Store::list_conversations() const {
    Call call(*impl_, "list the conversations");
    auto q = call.db.query("SELECT " ARBOR_CONVERSATION_COLUMNS
                           " FROM conversations ORDER BY updated_at DESC, id DESC");
    std::vector<Conversation> out;
    while (q.step()) out.push_back(read_conversation(q));
    return out;
}

ConversationSettings Store::conversation_settings(ConversationId id) const {
    return conversation(id).settings;
}

void Store::set_conversation_settings(ConversationId id, const ConversationSettings& settings) {
    Call call(*impl_, "change the conversation settings");
    check_settings(call.db, settings);
    store::Transaction tx(call.db);
    auto q = call.db.query("UPDATE conversations SET system_prompt = ?2, temperature = ?3,"
                           " top_p = ?4, top_k = ?5, max_tokens = ?6, repetition_penalty = ?7,"
                           " min_p = ?8, seed = ?9, stop_strings = ?10 WHERE id = ?1");
    q.bind(1, id).bind(2, settings.system_prompt).bind(3, settings.temperature);
    q.bind(4, settings.top_p).bind(5, settings.top_k).bind(6, settings.max_tokens);
    q.bind(7, settings.repetition_penalty).bind(8, settings.min_p).bind(9, settings.seed);
    q.bind(10, join_stop_strings(settings.stop_strings)).run();
    if (call.db.changes() == 0)
        store::fail(call.db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
    tx.commit();
}

void Store::set_conversation_model(ConversationId id, std::string_view model) {
    Call call(*impl_, "record the conversation's model");
    store::Transaction tx(call.db);
    call.db.query("UPDATE conversations SET model = ?2 WHERE id = ?1").bind(1, id).bind(2, model).run();
    if (call.db.changes() == 0)
        store::fail(call.db, StoreError::Kind::not_found, "no conversation " + std::to_string(id));
    tx.commit();
}

std::optional<std::string> Store::app_setting(std::string_view key) const {
    Call call(*impl_, "read an app setting");
    auto q = call.db.query("SELECT value FROM app_settings WHERE key = ?1");
    q.bind(1, key);
    if (!q.step()) return std::nullopt;
    return q.text(0);
}

void Store::set_app_setting(std::string_view key, std::string_view value) {
    Call call(*impl_, "save an app setting");
    if (key.empty()) store::fail(call.db, StoreError::Kind::invalid, "the setting key is empty");
    store::Transaction tx(call.db);
    auto q = call.db.query("INSERT INTO app_settings (key, value) VALUES (?1, ?2)"
                           " ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    q.bind(1, key).bind(2, value).run();
    tx.commit();
}

void Store::remove_app_setting(std::string_view key) {
    Call call(*impl_, "remove an app setting");
    store::Transaction tx(call.db);
    call.db.query("DELETE FROM app_settings WHERE key = ?1").bind(1, key).run();
    tx.commit();
}

std::vector<OpenTab> Store::open_tabs() const {
    Call call(*impl_, "read the open tabs");
    auto q = call.db.query("SELECT conversation_id, leaf_id, active FROM open_tabs ORDER BY position");
    std::vector<OpenTab> tabs;
    while (q.step()) tabs.push_back({q.int64(0), q.opt_int64(1), q.int64(2) != 0});
    return tabs;
}

void Store::save_open_tabs(std::span<const OpenTab> tabs) {
    Call call(*impl_, "save the open tabs");
    store::Transaction tx(call.db);
    call.db.query("DELETE FROM open_tabs").run();
    for (std::size_t i = 0; i < tabs.size(); ++i) {
        const OpenTab& tab = tabs[i];
        store::require_conversation(call.db, tab.conversation_id);
        if (tab.leaf_id) {
            auto m = call.db.query("SELECT conversation_id FROM messages WHERE id = ?1");
            m.bind(1, *tab.leaf_id);
            if (!m.step() || m.int64(0) != tab.conversation_id)
                store::fail(call.db, StoreError::Kind::invalid,
                            "message " + std::to_string(*tab.leaf_id) +
                                " is not in conversation " + std::to_string(tab.conversation_id));
        }
        auto q = call.db.query("INSERT INTO open_tabs (position, conversation_id, leaf_id, active)"
                               " VALUES (?1, ?2, ?3, ?4)");
        q.bind(1, static_cast<std::int64_t>(i)).bind(2, tab.conversation_id).bind(3, tab.leaf_id);
        q.bind(4, tab.active ? 1 : 0).run();
    }
    tx.commit();
}

} // namespace arbor
