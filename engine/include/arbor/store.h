// Arbor's persistent storage: conversations, their message trees, per-conversation and
// app settings, and the open tabs, in one SQLite file (WAL mode) under data_dir().
//
// A Store is one connection. Its methods are serialized by an internal mutex, so it may
// be shared between worker threads, but every call does file I/O: keep it off the GUI
// thread. Every write is one transaction; a failed write (full disk, read-only file,
// bad id) throws StoreError and leaves the database as it was. Beside the file live
// SQLite's -wal and -shm files and <file>.lock, which the first Store to open the file
// holds (flock) while it is open.
#pragma once

#include "arbor/role.h"

#include "arbor/error.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

using ConversationId = std::int64_t;
using MessageId = std::int64_t;

class StoreError : public Error {
public:
    enum class Kind { other, not_found, invalid, disk_full, read_only, busy, corrupt };
    StoreError(Kind kind, const std::string& message) : Error(message), kind_(kind) {}
    Kind kind() const { return kind_; }

private:
    Kind kind_;
};

// Sampling overrides of one conversation; an empty optional means "use the app default".
struct ConversationSettings {
    std::string system_prompt;
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int> top_k;
    std::optional<int> max_tokens;
    std::optional<double> repetition_penalty;  // 1 = off
    std::optional<double> min_p;
    std::optional<std::int64_t> seed;          // unset: a new random seed per reply
    std::vector<std::string> stop_strings;     // none empty, none holding U+001F

    bool operator==(const ConversationSettings&) const = default;
};

// Timestamps are milliseconds since the Unix epoch.
struct Conversation {
    ConversationId id = 0;
    std::string title;
    std::int64_t created_at = 0;
    std::int64_t updated_at = 0;  // last activity: a message added or finished
    ConversationSettings settings;
    // The model the conversation last generated with: a local model file's path; empty
    // when not recorded (a conversation of an older Arbor, or one never answered).
    std::string model;
};

enum class MessageState { complete, streaming, stopped, error };

std::string_view to_string(Role role);
std::string_view to_string(MessageState state);

// Filled when a generated reply finishes; empty optionals were not measured.
struct MessageStats {
    std::optional<int> prompt_tokens;
    std::optional<int> cached_tokens;
    std::optional<double> ttft_ms;
    std::optional<double> tokens_per_second;
    std::string finish_reason;
    std::optional<int> disk_tokens;  // of cached_tokens, read from the KV disk tier
    // How many messages of the path before the reply its prompt left out (the oldest),
    // because all of them did not fit the context.
    std::optional<int> omitted_messages;

    bool operator==(const MessageStats&) const = default;
};

struct Message {
    MessageId id = 0;
    ConversationId conversation_id = 0;
    std::optional<MessageId> parent_id;  // empty for a first message
    Role role = Role::User;
    std::string text;
    std::vector<std::int32_t> token_ids;
    std::int64_t created_at = 0;
    MessageState state = MessageState::complete;
    MessageStats stats;
};

struct SearchHit {
    ConversationId conversation_id = 0;
    std::string title;
    std::optional<MessageId> message_id;  // empty when the title matched
    std::string snippet;                  // excerpt of the matching message, else empty
};

struct OpenTab {
    ConversationId conversation_id = 0;
    std::optional<MessageId> leaf_id;  // the branch shown; empty: the latest leaf
    bool active = false;

    bool operator==(const OpenTab&) const = default;
};

// What opening the database found; the app shows `problem` when it is not empty.
struct StoreOpenReport {
    std::string problem;                // why the file was replaced, else empty
    std::filesystem::path moved_aside;  // where the unreadable file went, else empty
    int found_version = 0;              // schema version before migrations (0: new file)
    int interrupted_replies = 0;        // 'streaming' replies of a crashed run, now 'stopped'
    // Read back from the damaged file into the new one (see store/salvage.h).
    int salvaged_conversations = 0;
    int salvaged_messages = 0;
};

struct StoreOptions {
    // Off forces the LIKE search even where SQLite has FTS5 (tests; FTS5-less builds
    // fall back on their own).
    bool full_text_search = true;
    int busy_timeout_ms = 5000;
};

class Store {
public:
    static constexpr int kSchemaVersion = 6;
    static constexpr std::string_view kDefaultFileName = "arbor.db";

    // data_dir()/arbor.db
    static std::filesystem::path default_path();

    // Opens or creates the database (and its directory), migrates it to kSchemaVersion,
    // and marks replies left 'streaming' by a crash as 'stopped'. A file that is not a
    // database or fails its quick check is renamed to <file>.corrupt-<UTC time> and
    // replaced by a new one (see open_report()). Throws StoreError when the file cannot
    // be opened, is from a newer Arbor, or is read-only and needs a migration.
    explicit Store(std::filesystem::path file, StoreOptions options = {});
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    const std::filesystem::path& path() const;
    const StoreOpenReport& open_report() const;
    bool read_only() const;
    bool full_text_search() const;  // FTS5 in use (else LIKE)

    // Conversations
    ConversationId create_conversation(std::string_view title,
                                       const ConversationSettings& settings = {});
    void rename_conversation(ConversationId id, std::string_view title);
    void delete_conversation(ConversationId id);  // with its messages and tabs
    Conversation conversation(ConversationId id) const;
    std::vector<Conversation> list_conversations() const;  // newest activity first
    ConversationSettings conversation_settings(ConversationId id) const;
    void set_conversation_settings(ConversationId id, const ConversationSettings& settings);
    // Records the model the conversation generated with (see Conversation::model); its
    // place in the list (updated_at) does not change.
    void set_conversation_model(ConversationId id, std::string_view model);

    // Conversations whose title, or one of whose finished messages, contains every word
    // of `query` (as word prefixes with FTS5, as substrings otherwise); one hit per
    // conversation, newest activity first. A reply still streaming is not searchable.
    std::vector<SearchHit> search(std::string_view query, int limit = 50) const;

    // Messages. A conversation's first messages have no parent; several children of one
    // parent are branches (regenerated or edited turns), in creation order.
    MessageId add_message(ConversationId conversation, std::optional<MessageId> parent, Role role,
                          std::string_view text, std::span<const std::int32_t> token_ids,
                          MessageState state = MessageState::complete);
    Message message(MessageId id) const;
    std::vector<Message> children(MessageId parent) const;
    std::vector<Message> roots(ConversationId conversation) const;
    std::vector<Message> path(MessageId leaf) const;  // root .. leaf
    // The newest message of the conversation (always a leaf), empty when it has none.
    std::optional<MessageId> latest_leaf(ConversationId conversation) const;

    // Streaming replies: add_message(..., MessageState::streaming), then append each
    // piece as it comes (one cheap row update; call at least once a second), then finish.
    void append_to_message(MessageId id, std::string_view text_piece,
                           std::span<const std::int32_t> token_ids);
    void finish_message(MessageId id, MessageState state, const MessageStats& stats = {});
    // Makes a finished reply 'streaming' again so that it can be continued (appended to,
    // then finished anew). Only an assistant message with no replies below it that is
    // 'complete' or 'stopped'; else StoreError invalid (not_found for an unknown id).
    void resume_message(MessageId id);

    // App settings: plain key/value text.
    std::optional<std::string> app_setting(std::string_view key) const;
    void set_app_setting(std::string_view key, std::string_view value);
    void remove_app_setting(std::string_view key);

    // Open tabs, in order; saving replaces the whole list.
    std::vector<OpenTab> open_tabs() const;
    void save_open_tabs(std::span<const OpenTab> tabs);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace arbor
