#include "kv/radix_cache.h"

#include "arbor/error.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace arbor::kv {

namespace {

using page_key_detail::mix;

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("radix cache: " + what); }

} // namespace

bool RadixCache::LeafKey::operator<(const LeafKey& o) const {
    return tick != o.tick ? tick < o.tick : serial < o.serial;
}

RadixCache::RadixCache(PagePool& pool, int32_t page_size) : pool_(pool), page_size_(page_size) {
    if (page_size < 1) throw Error("KV page size must be positive, got " + std::to_string(page_size));
    in_cache_.assign(size_t(pool.capacity()), 0);
}

RadixCache::~RadixCache() {
    try {
        clear();
    } catch (...) {
        // Only a pool already corrupted by someone else can throw here; nothing to save.
    }
}

std::span<const int32_t> RadixCache::chunk(std::span<const int32_t> tokens, size_t page_index) const {
    return tokens.subspan(page_index * size_t(page_size_), size_t(page_size_));
}

uint64_t RadixCache::hash_chunk(std::span<const int32_t> chunk) const {
    uint64_t h = 0x243f6a8885a308d3ull;
    for (const int32_t t : chunk) h = (h ^ uint32_t(t)) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    return mix(h);
}

RadixCache::Node* RadixCache::find_child(Node& node, std::span<const int32_t> first_chunk) const {
    const auto [begin, end] = node.children.equal_range(hash_chunk(first_chunk));
    for (auto it = begin; it != end; ++it) {
        Node* child = it->second.get();
        if (std::equal(first_chunk.begin(), first_chunk.end(), child->tokens.begin())) return child;
    }
    return nullptr;
}

size_t RadixCache::common_pages(const Node& node, std::span<const int32_t> tokens, size_t from, size_t n_pages) const {
    size_t j = 0;
    while (j < node.pages.size() && from + j < n_pages) {
        const auto want = chunk(tokens, from + j);
        if (!std::equal(want.begin(), want.end(), node.tokens.begin() + std::ptrdiff_t(j * size_t(page_size_)))) break;
        ++j;
    }
    return j;
}

void RadixCache::add_leaf(Node& node) {
    leaves_.insert(LeafKey{node.tick, node.serial, &node});
    node.in_leaves = true;
}

void RadixCache::remove_leaf(Node& node) {
    leaves_.erase(LeafKey{node.tick, node.serial, &node});
    node.in_leaves = false;
}

void RadixCache::touch(Node& node, uint64_t tick) {
    if (node.in_leaves) {
        remove_leaf(node);
        node.tick = tick;
        add_leaf(node);
    } else {
        node.tick = tick;
    }
}

std::unique_ptr<RadixCache::Node> RadixCache::make_node(Node* parent) {
    auto node = std::make_unique<Node>();
    node->parent = parent;
    node->serial = next_serial_++;
    return node;
}

int32_t RadixCache::common_tokens(const Node& node, size_t page_index, std::span<const int32_t> rest) const {
    const size_t offset = page_index * size_t(page_size_);
    const size_t limit = std::min({rest.size(), size_t(page_size_), node.tokens.size() - offset});
    const int32_t* cached = node.tokens.data() + offset;
    size_t j = 0;
    while (j < limit && cached[j] == rest[j]) ++j;
    return int32_t(j);
}

bool RadixCache::starts_with(const Node& node, std::span<const int32_t> head) const {
    return head.size() <= node.tokens.size() && std::equal(head.begin(), head.end(), node.tokens.begin());
}

RadixCache::Walk RadixCache::walk(uint64_t ns, std::span<const int32_t> tokens, bool with_partial) const {
    Walk w;
    const auto root = roots_.find(ns);
    if (root == roots_.end()) return w;
    const size_t n_full = tokens.size() / size_t(page_size_);
    Node* cur = root->second.get();
    Node* inside = nullptr;  // edge the match stopped in, if it did not stop at a node's end
    size_t inside_at = 0;    // index of its first unmatched page
    size_t i = 0;
    while (i < n_full) {
        Node* child = find_child(*cur, chunk(tokens, i));
        if (!child) break;
        const size_t m = common_pages(*child, tokens, i, n_full);
        w.path.emplace_back(child, m);
        i += m;
        if (m < child->pages.size()) {
            inside = child;
            inside_at = m;
            break;
        }
        cur = child;
    }
    w.pages = i;
    if (!with_partial) return w;

    // Whole pages stopped matching here, so every candidate shares fewer than P tokens.
    const auto rest = tokens.subspan(i * size_t(page_size_));
    if (inside) {
        w.best = inside;
        w.best_at = inside_at;
        w.best_len = common_tokens(*inside, inside_at, rest);
    } else {
        for (const auto& [h, child] : cur->children) {
            const int32_t len = common_tokens(*child, 0, rest);
            if (len > w.best_len) {
                w.best = child.get();
                w.best_len = len;
            }
        }
        // Tails hang only at node ends, so none can continue a match stopped inside an edge.
        for (const auto& tail : cur->tails) {
            const int32_t len = common_tokens(*tail, 0, rest);
            if (len > w.best_len) {
                w.best = tail.get();
                w.best_len = len;
            }
        }
    }
    return w;
}

std::vector<int32_t> RadixCache::match(uint64_t ns, std::span<const int32_t> tokens, PartialPage* partial,
                                       PageKey* last_key) {
    std::vector<int32_t> out;
    if (partial) *partial = PartialPage{};
    if (last_key) *last_key = root_key_of(ns);
    const Walk w = walk(ns, tokens, partial != nullptr);
    const uint64_t tick = ++clock_;
    for (const auto& [node, m] : w.path) {
        touch(*node, tick);
        out.insert(out.end(), node->pages.begin(), node->pages.begin() + std::ptrdiff_t(m));
        if (last_key && m > 0) *last_key = node->keys[m - 1];
    }
    for (const int32_t page : out) pool_.retain(page);
    if (partial && w.best_len > 0) {
        touch(*w.best, tick);
        partial->page = w.best->pages[w.best_at];
        partial->tokens = w.best_len;
        pool_.retain(partial->page);
    }
    return out;
}

int32_t RadixCache::matched_tokens(uint64_t ns, std::span<const int32_t> tokens) const {
    const Walk w = walk(ns, tokens, /*with_partial=*/true);
    return int32_t(w.pages) * page_size_ + w.best_len;
}

RadixCache::Node* RadixCache::split(Node& node, size_t keep) {
    Node* parent = node.parent;
    auto upper = make_node(parent);
    Node* up = upper.get();
    up->key_hash = node.key_hash;
    up->tick = node.tick;
    const auto cut = std::ptrdiff_t(keep * size_t(page_size_));
    up->tokens.assign(node.tokens.begin(), node.tokens.begin() + cut);
    up->pages.assign(node.pages.begin(), node.pages.begin() + std::ptrdiff_t(keep));
    up->before = node.before;
    up->keys.assign(node.keys.begin(), node.keys.begin() + std::ptrdiff_t(keep));

    std::unique_ptr<Node> owned;
    const auto [begin, end] = parent->children.equal_range(node.key_hash);
    for (auto it = begin; it != end; ++it) {
        if (it->second.get() == &node) {
            owned = std::move(it->second);
            it->second = std::move(upper);
            break;
        }
    }
    if (!owned) fail("node to split is missing from its parent");

    const bool was_leaf = node.in_leaves;
    if (was_leaf) remove_leaf(node);
    node.tokens.erase(node.tokens.begin(), node.tokens.begin() + cut);
    node.pages.erase(node.pages.begin(), node.pages.begin() + std::ptrdiff_t(keep));
    node.keys.erase(node.keys.begin(), node.keys.begin() + std::ptrdiff_t(keep));
    node.before = up->keys.back();
    node.parent = up;
    node.key_hash = hash_chunk(chunk(node.tokens, 0));
    if (was_leaf) add_leaf(node);
    up->children.emplace(node.key_hash, std::move(owned));
    return up;
}

int32_t RadixCache::insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> pages,
                           bool partial_tail) {
    const size_t P = size_t(page_size_);
    size_t n = pages.size();  // whole pages
    size_t tail_len = 0;
    if (partial_tail) {
        if ((tokens.size() + P - 1) / P != n)
            throw std::invalid_argument("radix cache insert: " + std::to_string(tokens.size()) + " tokens fill " +
                                        std::to_string((tokens.size() + P - 1) / P) + " pages, got " +
                                        std::to_string(n));
        tail_len = tokens.size() % P;
        if (tail_len > 0) --n;
    } else if (tokens.size() < n * P) {
        throw std::invalid_argument("radix cache insert: " + std::to_string(n) + " pages need " +
                                    std::to_string(n * P) + " tokens, got " + std::to_string(tokens.size()));
    }
    if (pages.empty()) return 0;
    auto& root = roots_[ns];
    if (!root) {
        root = make_node(nullptr);
        root->before = root_key_of(ns);
    }

    const uint64_t tick = ++clock_;
    Node* cur = root.get();
    Node* inside = nullptr;  // edge the walk stopped in, if not at a node's end
    size_t inside_at = 0;    // index of its first page not walked
    size_t i = 0;
    while (i < n) {
        Node* child = find_child(*cur, chunk(tokens, i));
        if (!child) break;
        const size_t m = common_pages(*child, tokens, i, n);
        touch(*child, tick);
        i += m;
        if (m < child->pages.size()) {
            inside = child;
            inside_at = m;
            break;
        }
        cur = child;
    }

    // Decide everything before the tree changes, so a bad call leaves it intact.
    const auto tail_tokens = tokens.subspan(n * P, tail_len);
    bool add_tail = tail_len > 0;
    std::vector<Node*> replaced;  // tails at the place of the first added page, superseded by it
    if (i < n) {
        if (!inside)
            for (const auto& tail : cur->tails)
                if (std::equal(tail->tokens.begin(), tail->tokens.end(), tokens.begin() + std::ptrdiff_t(i * P)))
                    replaced.push_back(tail.get());
    } else if (add_tail) {
        if (inside) {
            add_tail = common_tokens(*inside, inside_at, tail_tokens) < int32_t(tail_len);
        } else {
            for (const auto& [h, child] : cur->children) add_tail = add_tail && !starts_with(*child, tail_tokens);
            for (const auto& tail : cur->tails) {
                if (starts_with(*tail, tail_tokens)) add_tail = false;
                else if (tail->tokens.size() < tail_len && std::equal(tail->tokens.begin(), tail->tokens.end(), tail_tokens.begin()))
                    replaced.push_back(tail.get());
            }
        }
        if (!add_tail) return 0;
    } else {
        return 0;
    }

    std::vector<int32_t> fresh(pages.begin() + std::ptrdiff_t(i), pages.begin() + std::ptrdiff_t(n));
    if (add_tail) fresh.push_back(pages[n]);
    for (size_t k = 0; k < fresh.size(); ++k) {
        const int32_t page = fresh[k];
        if (pool_.refcount(page) < 1) fail("insert of free page " + std::to_string(page));
        // Only the first added page takes a replaced tail's place: there its page may come back.
        const bool refilled =
            k == 0 && std::any_of(replaced.begin(), replaced.end(), [&](const Node* t) { return t->pages[0] == page; });
        if (in_cache_[size_t(page)] && !refilled)
            fail("insert of page " + std::to_string(page) + " already cached for other tokens");
    }
    std::vector<int32_t> sorted = fresh;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) fail("insert lists a page twice");

    // Retained before superseded tails are released: the same page may come back fuller.
    for (const int32_t page : fresh) pool_.retain(page);
    for (Node* tail : replaced) drop_tail(*cur, *tail);
    if (inside) cur = split(*inside, inside_at);
    if (i < n) {
        if (cur->in_leaves) remove_leaf(*cur);
        auto leaf = make_node(cur);
        leaf->tokens.assign(tokens.begin() + std::ptrdiff_t(i * P), tokens.begin() + std::ptrdiff_t(n * P));
        leaf->pages.assign(pages.begin() + std::ptrdiff_t(i), pages.begin() + std::ptrdiff_t(n));
        leaf->tick = tick;
        leaf->key_hash = hash_chunk(chunk(leaf->tokens, 0));
        leaf->before = last_key(*cur);
        for (size_t k = 0; k < leaf->pages.size(); ++k)
            leaf->keys.push_back(chain_key(k == 0 ? leaf->before : leaf->keys.back(), chunk(leaf->tokens, k)));
        Node* added = leaf.get();
        const uint64_t key = leaf->key_hash;
        cur->children.emplace(key, std::move(leaf));
        cur = added;
        if (!add_tail) add_leaf(*added);
    }
    if (add_tail) {
        if (cur->in_leaves) remove_leaf(*cur);
        auto tail = make_node(cur);
        tail->is_tail = true;
        tail->tokens.assign(tail_tokens.begin(), tail_tokens.end());
        tail->pages.push_back(pages[n]);
        tail->before = last_key(*cur);
        tail->tick = tick;
        add_leaf(*tail);
        cur->tails.push_back(std::move(tail));
    }
    for (const int32_t page : fresh) in_cache_[size_t(page)] = 1;
    cached_ += int32_t(fresh.size());
    return int32_t(fresh.size());
}

std::unique_ptr<RadixCache::Node> RadixCache::detach(Node& node) {
    Node& parent = *node.parent;
    std::unique_ptr<Node> owned;
    if (node.is_tail) {
        const auto it = std::find_if(parent.tails.begin(), parent.tails.end(), [&](const auto& t) { return t.get() == &node; });
        if (it == parent.tails.end()) fail("tail to detach is missing from its parent");
        owned = std::move(*it);
        parent.tails.erase(it);
    } else {
        const auto [begin, end] = parent.children.equal_range(node.key_hash);
        for (auto c = begin; c != end; ++c) {
            if (c->second.get() == &node) {
                owned = std::move(c->second);
                parent.children.erase(c);
                break;
            }
        }
        if (!owned) fail("node to detach is missing from its parent");
    }
    return owned;
}

void RadixCache::drop_tail(Node& parent, Node& tail) {
    const int32_t page = tail.pages[0];
    remove_leaf(tail);
    detach(tail);
    in_cache_[size_t(page)] = 0;
    --cached_;
    pool_.release(page);
    if (parent.parent != nullptr && leafless(parent)) add_leaf(parent);
}

void RadixCache::clear() {
    leaves_.clear();
    std::vector<std::unique_ptr<Node>> stack;
    for (auto& [ns, root] : roots_) stack.push_back(std::move(root));
    roots_.clear();
    cached_ = 0;
    // Iterative teardown: a deep tree must not recurse through unique_ptr destructors.
    while (!stack.empty()) {
        std::unique_ptr<Node> node = std::move(stack.back());
        stack.pop_back();
        for (auto& [h, child] : node->children) stack.push_back(std::move(child));
        for (auto& tail : node->tails) stack.push_back(std::move(tail));
        for (const int32_t page : node->pages) {
            in_cache_[size_t(page)] = 0;
            pool_.release(page);
        }
    }
}

} // namespace arbor::kv
