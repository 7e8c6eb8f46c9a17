// Prefix cache over KV pages: a radix tree per namespace (the model's mixed with the
// request's: see arbor::Request::cache_namespace) whose edges hold runs of whole
// pages, each page with the exact token ids it was computed from.
// The cache holds one PagePool reference on every page in the tree; callers get their
// own references from match() and release them through the pool.
//
// Tails: the partially filled last page of a finished sequence hangs at the end of a
// node (or at a root) as a leaf of its own holding 1..P-1 tokens. It is never shared in
// place (its later slots belong to whoever wrote it); match() only offers it as a
// PartialPage whose head the caller copies. At one place the tails are prefix-free
// among themselves and none is a prefix of a child's first page: a page extending a
// tail supersedes it, since it serves every request the tail served.
//
// Eviction choice: leaves live in an ordered set keyed by (last-used tick, creation
// serial). evict() walks that set once from the oldest end, trimming unreferenced pages
// off the tail of each leaf; a leaf emptied this way is removed and its parent, once
// childless, enters the set and the walk continues from whichever comes first, so one
// call can free a whole chain. Leaves whose tail page a caller still holds are stepped
// over: one call costs O(leaves held by callers + pages freed * log leaves) instead of
// a scan of the whole tree per page. Only leaves are ever in the set, so a parent goes
// only after its children; every touch covers the whole path from the root, so a
// parent is never older than its children.
//
// Disk keys: every whole page also carries its content address (page_key.h), chained
// from root_key(model key, namespace) through the pages before it, so that an evicted
// page can be spilled to the disk tier under the key a later lookup computes.
#pragma once

#include "kv/page_key.h"
#include "kv/page_pool.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

namespace arbor::kv {

// The head of a cached page that continues a whole-page match: its first `tokens`
// positions (0 < tokens < page size) hold the KV of the next tokens asked for, so a
// caller can copy them instead of computing them.
struct PartialPage {
    int32_t page = -1;  // -1: none
    int32_t tokens = 0;
};

// Called for each whole page that evict() is about to free, while the cache still holds
// it (its bytes are intact until the call returns): its key, its parent's key and its
// token ids.
using SpillFn = std::function<void(const PageKey& key, const PageKey& parent, std::span<const int32_t> tokens,
                                   int32_t page)>;

class RadixCache {
public:
    // The pool must outlive the cache. Throws arbor::Error for a page size below 1.
    RadixCache(PagePool& pool, int32_t page_size);
    ~RadixCache();  // releases the cache's references
    RadixCache(const RadixCache&) = delete;
    RadixCache& operator=(const RadixCache&) = delete;

    int32_t page_size() const { return page_size_; }

    // The model part of every page's key (page_key.h). Set before the first insert.
    void set_model_key(const PageKey& model) { model_key_ = model; }
    PageKey root_key_of(uint64_t ns) const { return root_key(model_key_, ns); }
    void set_spill(SpillFn spill) { spill_ = std::move(spill); }
    // Calls fn for every cached whole page (no tails), parents before children.
    void for_each_page(const SpillFn& fn) const;

    // Longest cached prefix of `tokens` made of whole pages under namespace `ns`,
    // verified on the exact token ids. Each returned page is retained for the caller
    // and the matched path is marked used now. With `partial`, also reports the cached
    // page right after the match (next in the edge, or among the children where it
    // stopped) sharing the most leading tokens with the rest, retained and marked used
    // the same way; page -1 when none shares a token. Tails hanging where the whole-page
    // match stopped are candidates too; they are never among the returned whole pages.
    // With `last_key`, also reports the key of the last returned page (the namespace's
    // root key when none): where a lookup on disk continues.
    std::vector<int32_t> match(uint64_t ns, std::span<const int32_t> tokens, PartialPage* partial = nullptr,
                               PageKey* last_key = nullptr);
    // How many leading tokens of `tokens` match() would serve now (its whole pages and
    // the partial page's head), without retaining a page or marking anything used: for
    // ranking requests by what the cache holds for them.
    int32_t matched_tokens(uint64_t ns, std::span<const int32_t> tokens) const;
    // Offers pages[i] holding tokens[i*P, (i+1)*P) for every i. Chunks not yet cached
    // under this prefix are added and retained by the cache; where a chunk is already
    // cached, the cache keeps its own page and the caller's stays the caller's.
    // Returns the number of pages newly cached. Throws std::invalid_argument when
    // tokens are fewer than pages.size()*P, and std::logic_error (tree left as it was)
    // when a page to be added is free, listed twice or already cached elsewhere.
    //
    // With `partial_tail`, pages.size() must be ceil(tokens.size() / P) and the last page
    // holds only the tokens past the whole pages (a full last page is a whole page). That
    // page is cached as a tail unless a cached page or tail at its place already starts
    // with its tokens. A tail (or whole page) added where a cached tail is a proper
    // prefix of its tokens replaces that tail: the cache releases the old tail page (the
    // same page offered again, now fuller, is simply kept; it counts as newly cached).
    int32_t insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> pages,
                   bool partial_tail = false);
    // Frees up to n pages only the cache holds (pool refcount 1), least-recently-used
    // leaves (tails included) first; a parent becomes a leaf once its children and tails
    // are gone. Returns how many.
    int32_t evict(int32_t n);

    int32_t cached_pages() const { return cached_; }
    // Cached pages that nothing else references and that evict() can reach now: a page
    // below one a caller still holds (possible when the caller inserted behind a
    // duplicate prefix) is not counted until that page is released.
    int32_t evictable_pages() const;
    // Drops every node and releases the cache's references.
    void clear();
    // Throws std::logic_error describing the first violation of tree shape, token/page
    // consistency, leaf-set bookkeeping or pool refcounts (every cached page >= 1).
    void check_invariants() const;

private:
    friend struct RadixCacheTestAccess;  // lets tests corrupt state to exercise check_invariants

    struct Node;
    struct LeafKey {
        uint64_t tick;
        uint64_t serial;
        Node* node;
        bool operator<(const LeafKey& o) const;
    };
    struct Node {
        Node* parent = nullptr;
        uint64_t key_hash = 0;  // hash of the first page's tokens (the key in parent); 0 for a tail
        std::vector<int32_t> tokens;  // pages.size() * page_size ids; 1..P-1 for a tail
        std::vector<int32_t> pages;   // exactly one for a tail
        PageKey before;               // key of the page before the first one (the root key at a root)
        std::vector<PageKey> keys;    // one per whole page; empty for a tail
        std::unordered_multimap<uint64_t, std::unique_ptr<Node>> children;
        std::vector<std::unique_ptr<Node>> tails;  // partial pages continuing this node's end
        bool is_tail = false;  // lives in parent->tails, never has children or tails
        uint64_t tick = 0;
        uint64_t serial = 0;
        bool in_leaves = false;
    };

    // What match() finds, read only: the nodes along the path with how many of their
    // pages matched (`pages` in all), and the page continuing the match the furthest
    // (best->pages[best_at], best_len leading tokens; none when best_len is 0).
    struct Walk {
        std::vector<std::pair<Node*, size_t>> path;
        size_t pages = 0;
        Node* best = nullptr;
        size_t best_at = 0;
        int32_t best_len = 0;
    };
    Walk walk(uint64_t ns, std::span<const int32_t> tokens, bool with_partial) const;

    std::span<const int32_t> chunk(std::span<const int32_t> tokens, size_t page_index) const;
    uint64_t hash_chunk(std::span<const int32_t> chunk) const;
    Node* find_child(Node& node, std::span<const int32_t> first_chunk) const;
    // Whole pages at the start of `node` equal to the chunks of tokens from page `from`.
    size_t common_pages(const Node& node, std::span<const int32_t> tokens, size_t from, size_t n_pages) const;
    // Leading tokens of page `page_index` of `node` equal to the start of `rest`.
    int32_t common_tokens(const Node& node, size_t page_index, std::span<const int32_t> rest) const;
    // Whether `node` (a child: its first page; a tail: its tokens) starts with `head`.
    bool starts_with(const Node& node, std::span<const int32_t> head) const;
    // Detaches and frees a tail of `parent`, releasing the cache's reference on its page.
    void drop_tail(Node& parent, Node& tail);
    // Takes a child or tail out of its parent (leaf set untouched).
    std::unique_ptr<Node> detach(Node& node);
    bool leafless(const Node& node) const { return node.children.empty() && node.tails.empty(); }
    void touch(Node& node, uint64_t tick);
    void add_leaf(Node& node);
    void remove_leaf(Node& node);
    // Splits `node` after its first `keep` pages; returns the new upper node.
    Node* split(Node& node, size_t keep);
    std::unique_ptr<Node> make_node(Node* parent);
    static const PageKey& last_key(const Node& node) { return node.keys.empty() ? node.before : node.keys.back(); }
    void check_node(const Node& node, const Node& parent, std::vector<uint8_t>& seen) const;
    void check_tails(const Node& node) const;

    PagePool& pool_;
    int32_t page_size_;
    std::unordered_map<uint64_t, std::unique_ptr<Node>> roots_;
    std::set<LeafKey> leaves_;
    std::vector<uint8_t> in_cache_;  // per pool page: held by the tree
    int32_t cached_ = 0;
    uint64_t clock_ = 0;
    uint64_t next_serial_ = 0;
    PageKey model_key_;
    SpillFn spill_;
};

} // namespace arbor::kv
