#include "api/reply_memory.h"

#include <cstring>

namespace arbor::api {

std::string ReplyMemory::key_of(uint64_t scope, const std::string& text) {
    std::string key(sizeof scope, '\0');
    std::memcpy(key.data(), &scope, sizeof scope);
    return key + text;
}

void ReplyMemory::remember(const std::string& text, std::vector<TokenId> ids, uint64_t scope) {
    if (text.empty() || ids.empty()) return;
    std::string key = key_of(scope, text);
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
        bytes_ -= it->second->bytes();
        it->second->ids = std::move(ids);
        bytes_ += it->second->bytes();
        entries_.splice(entries_.begin(), entries_, it->second);
    } else {
        entries_.push_front(Entry{std::move(key), std::move(ids)});
        index_.emplace(entries_.front().key, entries_.begin());
        bytes_ += entries_.front().bytes();
    }
    evict_locked();
}

std::optional<std::vector<TokenId>> ReplyMemory::recall(const std::string& text, uint64_t scope) {
    const std::string key = key_of(scope, text);
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->ids;
}

size_t ReplyMemory::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

size_t ReplyMemory::bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

void ReplyMemory::evict_locked() {
    while (!entries_.empty() && (entries_.size() > max_entries_ || bytes_ > max_bytes_)) {
        Entry& last = entries_.back();
        bytes_ -= last.bytes();
        index_.erase(last.key);
        entries_.pop_back();
    }
}

} // namespace arbor::api
