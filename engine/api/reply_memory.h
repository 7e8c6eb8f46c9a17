// Remembers the token ids of the assistant replies this server generated, keyed by
// their exact text. API clients send a conversation back as text; composing a known
// reply from its ids (instead of tokenizing the text again, which may split it
// differently) keeps the follow-up prompt a token-exact extension of the previous
// prompt and reply, so the prefix cache serves all of it. Bounded: least recently used
// entries go first once max_entries or max_bytes is exceeded. Thread-safe.
//
// Entries are kept per scope (the request's prefix-cache namespace): whether a text was
// recalled shows in the prompt's token count, so a client must not find the replies
// generated for another namespace.
#pragma once

#include "arbor/tokenizer.h"

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arbor::api {

class ReplyMemory {
public:
    explicit ReplyMemory(size_t max_entries = 512, size_t max_bytes = 32u << 20)
        : max_entries_(max_entries), max_bytes_(max_bytes) {}

    // Empty texts are not remembered.
    void remember(const std::string& text, std::vector<TokenId> ids, uint64_t scope = 0);
    std::optional<std::vector<TokenId>> recall(const std::string& text, uint64_t scope = 0);
    size_t size() const;
    size_t bytes() const;

private:
    struct Entry {
        std::string key;  // the scope's 8 bytes, then the text
        std::vector<TokenId> ids;
        size_t bytes() const { return key.size() + ids.size() * sizeof(TokenId) + 64; }
    };
    static std::string key_of(uint64_t scope, const std::string& text);
    void evict_locked();

    size_t max_entries_, max_bytes_;
    mutable std::mutex mutex_;
    std::list<Entry> entries_;  // most recently used first
    std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;  // views into entries_
    size_t bytes_ = 0;
};

} // namespace arbor::api
