#include "kv/radix_cache.h"

#include "arbor/error.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace arbor::kv {

namespace {

uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

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
    const size_t limit = std::min(rest.size(), size_t(page_size_));
    const int32_t* cached = node.tokens.data() + page_index * size_t(page_size_);
    size_t j = 0;
    while (j < limit && cached[j] == rest[j]) ++j;
    return int32_t(j);
}

std::vector<int32_t> RadixCache::match(uint64_t ns, std::span<const int32_t> tokens, PartialPage* partial) {
    std::vector<int32_t> out;
    if (partial) *partial = PartialPage{};
    const auto root = roots_.find(ns);
    if (root == roots_.end()) return out;
    const size_t n_full = tokens.size() / size_t(page_size_);
    const uint64_t tick = ++clock_;
    Node* cur = root->second.get();
    Node* inside = nullptr;  // edge the match stopped in, if it did not stop at a node's end
    size_t inside_at = 0;    // index of its first unmatched page
    size_t i = 0;
    while (i < n_full) {
        Node* child = find_child(*cur, chunk(tokens, i));
        if (!child) break;
        const size_t m = common_pages(*child, tokens, i, n_full);
        touch(*child, tick);
        out.insert(out.end(), child->pages.begin(), child->pages.begin() + std::ptrdiff_t(m));
        i += m;
        if (m < child->pages.size()) {
            inside = child;
            inside_at = m;
            break;
        }
        cur = child;
    }
    for (const int32_t page : out) pool_.retain(page);
    if (!partial) return out;

    // Whole pages stopped matching here, so every candidate shares fewer than P tokens.
    const auto rest = tokens.subspan(i * size_t(page_size_));
    Node* best = nullptr;
    size_t best_at = 0;
    int32_t best_len = 0;
    if (inside) {
        best = inside;
        best_at = inside_at;
        best_len = common_tokens(*inside, inside_at, rest);
    } else {
        for (const auto& [h, child] : cur->children) {
            const int32_t len = common_tokens(*child, 0, rest);
            if (len > best_len) {
                best = child.get();
                best_len = len;
            }
        }
    }
    if (best_len > 0) {
        touch(*best, tick);
        partial->page = best->pages[best_at];
        partial->tokens = best_len;
        pool_.retain(partial->page);
    }
    return out;
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
    node.parent = up;
    node.key_hash = hash_chunk(chunk(node.tokens, 0));
    if (was_leaf) add_leaf(node);
    up->children.emplace(node.key_hash, std::move(owned));
    return up;
}

int32_t RadixCache::insert(uint64_t ns, std::span<const int32_t> tokens, std::span<const int32_t> pages) {
    const size_t n = pages.size();
    if (tokens.size() < n * size_t(page_size_))
        throw std::invalid_argument("radix cache insert: " + std::to_string(n) + " pages need " +
                                    std::to_string(n * size_t(page_size_)) + " tokens, got " +
                                    std::to_string(tokens.size()));
    if (n == 0) return 0;
    auto& root = roots_[ns];
    if (!root) root = make_node(nullptr);

    const uint64_t tick = ++clock_;
    Node* cur = root.get();
    Node* diverging = nullptr;  // edge the sequence leaves in its middle
    size_t keep = 0;
    size_t i = 0;
    while (i < n) {
        Node* child = find_child(*cur, chunk(tokens, i));
        if (!child) break;
        const size_t m = common_pages(*child, tokens, i, n);
        touch(*child, tick);
        i += m;
        if (m < child->pages.size()) {
            if (i < n) {
                diverging = child;
                keep = m;
            }
            break;
        }
        cur = child;
    }
    if (i == n) return 0;

    // Everything is validated before the tree changes, so a bad call leaves it intact.
    std::vector<int32_t> fresh(pages.begin() + std::ptrdiff_t(i), pages.end());
    for (const int32_t page : fresh) {
        if (pool_.refcount(page) < 1) fail("insert of free page " + std::to_string(page));
        if (in_cache_[size_t(page)]) fail("insert of page " + std::to_string(page) + " already cached for other tokens");
    }
    std::sort(fresh.begin(), fresh.end());
    if (std::adjacent_find(fresh.begin(), fresh.end()) != fresh.end()) fail("insert lists a page twice");

    if (diverging) cur = split(*diverging, keep);
    if (cur->in_leaves) remove_leaf(*cur);
    auto leaf = make_node(cur);
    leaf->tokens.assign(tokens.begin() + std::ptrdiff_t(i * size_t(page_size_)),
                        tokens.begin() + std::ptrdiff_t(n * size_t(page_size_)));
    leaf->pages.assign(pages.begin() + std::ptrdiff_t(i), pages.end());
    leaf->tick = tick;
    leaf->key_hash = hash_chunk(chunk(leaf->tokens, 0));
    for (const int32_t page : leaf->pages) {
        pool_.retain(page);
        in_cache_[size_t(page)] = 1;
    }
    cached_ += int32_t(n - i);
    add_leaf(*leaf);
    const uint64_t key = leaf->key_hash;
    cur->children.emplace(key, std::move(leaf));
    return int32_t(n - i);
}

int32_t RadixCache::evict(int32_t n) {
    int32_t freed = 0;
    auto it = leaves_.begin();
    while (freed < n && it != leaves_.end()) {
        Node* leaf = it->node;
        while (freed < n && !leaf->pages.empty() && pool_.refcount(leaf->pages.back()) == 1) {
            const int32_t page = leaf->pages.back();
            leaf->pages.pop_back();
            leaf->tokens.resize(leaf->tokens.size() - size_t(page_size_));
            in_cache_[size_t(page)] = 0;
            --cached_;
            ++freed;
            pool_.release(page);
        }
        if (!leaf->pages.empty()) {
            ++it;
            continue;
        }
        it = leaves_.erase(it);
        Node* parent = leaf->parent;
        const auto [begin, end] = parent->children.equal_range(leaf->key_hash);
        for (auto c = begin; c != end; ++c) {
            if (c->second.get() == leaf) {
                parent->children.erase(c);
                break;
            }
        }
        if (parent->parent != nullptr && parent->children.empty()) {
            add_leaf(*parent);
            // It may sort before the walk's next stop (or even before the removed leaf).
            const auto pit = leaves_.find(LeafKey{parent->tick, parent->serial, parent});
            if (it == leaves_.end() || *pit < *it) it = pit;
        }
    }
    return freed;
}

int32_t RadixCache::evictable_pages() const {
    // Pre-order list; walking it backwards visits every node after all its descendants.
    std::vector<std::pair<const Node*, size_t>> order;  // node, parent index
    for (const auto& [ns, root] : roots_) {
        const size_t root_index = order.size();
        order.emplace_back(root.get(), root_index);
        for (size_t k = root_index; k < order.size(); ++k)
            for (const auto& [h, child] : order[k].first->children) order.emplace_back(child.get(), k);
    }
    std::vector<uint8_t> blocked(order.size(), 0);  // subtree holds a page someone else uses
    int32_t freeable = 0;
    for (size_t k = order.size(); k-- > 0;) {
        const Node& node = *order[k].first;
        if (!blocked[k]) {
            size_t trailing = 0;
            while (trailing < node.pages.size() && pool_.refcount(node.pages[node.pages.size() - 1 - trailing]) == 1)
                ++trailing;
            freeable += int32_t(trailing);
            if (trailing < node.pages.size()) blocked[k] = 1;
        }
        blocked[order[k].second] |= blocked[k];
    }
    return freeable;
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
        for (const int32_t page : node->pages) {
            in_cache_[size_t(page)] = 0;
            pool_.release(page);
        }
    }
}

} // namespace arbor::kv
