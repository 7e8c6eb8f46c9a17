// RadixCache::check_invariants: a full walk comparing the tree with its bookkeeping.
#include "kv/radix_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace arbor::kv {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("radix cache invariant: " + what); }

} // namespace

void RadixCache::check_node(const Node& node, const Node& parent, std::vector<uint8_t>& seen) const {
    const std::string id = "node #" + std::to_string(node.serial);
    if (node.parent != &parent) fail(id + " has a wrong parent pointer");
    if (node.pages.empty()) fail(id + " holds no page");
    if (node.is_tail) {
        if (node.pages.size() != 1 || node.tokens.empty() || node.tokens.size() >= size_t(page_size_))
            fail("tail " + id + " holds " + std::to_string(node.tokens.size()) + " tokens in " +
                 std::to_string(node.pages.size()) + " pages");
        if (!leafless(node)) fail("tail " + id + " has nodes below it");
    } else {
        if (node.tokens.size() != node.pages.size() * size_t(page_size_))
            fail(id + " holds " + std::to_string(node.tokens.size()) + " tokens for " +
                 std::to_string(node.pages.size()) + " pages");
        if (node.key_hash != hash_chunk(chunk(node.tokens, 0))) fail(id + " is keyed by a stale hash");
        if (node.keys.size() != node.pages.size()) fail(id + " has " + std::to_string(node.keys.size()) + " disk keys for " +
                                                        std::to_string(node.pages.size()) + " pages");
        if (!(node.before == last_key(parent))) fail(id + " does not chain its disk keys from its parent's");
        for (size_t k = 0; k < node.keys.size(); ++k)
            if (!(node.keys[k] == chain_key(k == 0 ? node.before : node.keys[k - 1], chunk(node.tokens, k))))
                fail(id + " holds a stale disk key for page " + std::to_string(k));
    }
    if (parent.parent != nullptr && node.tick > parent.tick) fail(id + " was used more recently than its parent");
    if (node.in_leaves != leafless(node)) fail(id + " is misfiled in the leaf set");
    if (node.in_leaves && !leaves_.contains(LeafKey{node.tick, node.serial, const_cast<Node*>(&node)}))
        fail(id + " is a leaf missing from the leaf set under its current key");
    for (const int32_t page : node.pages) {
        if (page < 0 || page >= pool_.capacity()) fail(id + " holds page id " + std::to_string(page) + " outside the pool");
        if (seen[size_t(page)]) fail("page " + std::to_string(page) + " is cached twice");
        seen[size_t(page)] = 1;
        if (!in_cache_[size_t(page)]) fail("page " + std::to_string(page) + " is in the tree but not marked cached");
        if (pool_.refcount(page) < 1) fail("cached page " + std::to_string(page) + " is free in the pool");
    }
}

void RadixCache::check_tails(const Node& node) const {
    for (const auto& tail : node.tails) {
        if (!tail->is_tail) fail("node #" + std::to_string(tail->serial) + " is filed among tails");
        for (const auto& other : node.tails)
            if (other != tail && starts_with(*other, tail->tokens))
                fail("tail #" + std::to_string(tail->serial) + " is a prefix of another tail at its place");
        for (const auto& [h, child] : node.children)
            if (starts_with(*child, tail->tokens))
                fail("tail #" + std::to_string(tail->serial) + " is a prefix of a whole page at its place");
    }
}

void RadixCache::check_invariants() const {
    if (in_cache_.size() != size_t(pool_.capacity())) fail("cached-page marks do not cover the pool");
    std::vector<uint8_t> seen(in_cache_.size(), 0);
    std::vector<const Node*> stack;
    size_t leaves_seen = 0;
    int32_t pages_seen = 0;
    for (const auto& [ns, root] : roots_) {
        if (root->parent || !root->pages.empty() || !root->tokens.empty() || root->in_leaves || root->is_tail)
            fail("root of namespace " + std::to_string(ns) + " is not an empty root");
        if (!(root->before == root_key_of(ns))) fail("root of namespace " + std::to_string(ns) + " has a stale disk key");
        stack.push_back(root.get());
        while (!stack.empty()) {
            const Node* node = stack.back();
            stack.pop_back();
            for (auto it = node->children.begin(); it != node->children.end(); ++it) {
                const Node& child = *it->second;
                if (child.is_tail) fail("tail #" + std::to_string(child.serial) + " is filed among children");
                if (it->first != child.key_hash) fail("a child is filed under another hash than its key");
                // Siblings must differ in their first page's tokens.
                const auto [begin, end] = node->children.equal_range(it->first);
                for (auto other = begin; other != end; ++other)
                    if (other != it && std::equal(child.tokens.begin(), child.tokens.begin() + page_size_,
                                                  other->second->tokens.begin()))
                        fail("two siblings start with the same page of tokens");
                check_node(child, *node, seen);
                pages_seen += int32_t(child.pages.size());
                leaves_seen += child.in_leaves ? 1 : 0;
                stack.push_back(&child);
            }
            check_tails(*node);
            for (const auto& tail : node->tails) {
                check_node(*tail, *node, seen);
                ++pages_seen;
                leaves_seen += tail->in_leaves ? 1 : 0;
            }
        }
    }
    if (pages_seen != cached_)
        fail("tree holds " + std::to_string(pages_seen) + " pages, count says " + std::to_string(cached_));
    if (leaves_seen != leaves_.size())
        fail("leaf set holds " + std::to_string(leaves_.size()) + " entries for " + std::to_string(leaves_seen) + " leaves");
    if (std::count(in_cache_.begin(), in_cache_.end(), uint8_t(1)) != pages_seen)
        fail("cached-page marks disagree with the tree");
}

} // namespace arbor::kv
