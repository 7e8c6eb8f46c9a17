// RadixCache eviction: the LRU walk over leaves (tails included), its dry-run count, and
// the walk over every page that a disk flush takes.
#include "kv/radix_cache.h"

#include <utility>
#include <vector>

namespace arbor::kv {

int32_t RadixCache::evict(int32_t n) {
    int32_t freed = 0;
    auto it = leaves_.begin();
    while (freed < n && it != leaves_.end()) {
        Node* leaf = it->node;
        while (freed < n && !leaf->pages.empty() && pool_.refcount(leaf->pages.back()) == 1) {
            const int32_t page = leaf->pages.back();
            if (spill_ && !leaf->is_tail) {
                const size_t k = leaf->pages.size() - 1;
                spill_(leaf->keys[k], k == 0 ? leaf->before : leaf->keys[k - 1], chunk(leaf->tokens, k), page);
            }
            if (!leaf->is_tail) leaf->keys.pop_back();
            leaf->pages.pop_back();
            leaf->tokens.resize(leaf->is_tail ? 0 : leaf->pages.size() * size_t(page_size_));
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
        detach(*leaf);
        if (parent->parent != nullptr && leafless(*parent)) {
            add_leaf(*parent);
            // It may sort before the walk's next stop (or even before the removed leaf).
            const auto pit = leaves_.find(LeafKey{parent->tick, parent->serial, parent});
            if (it == leaves_.end() || *pit < *it) it = pit;
        }
    }
    return freed;
}

void RadixCache::for_each_page(const SpillFn& fn) const {
    std::vector<const Node*> stack;
    for (const auto& [ns, root] : roots_) stack.push_back(root.get());
    while (!stack.empty()) {
        const Node* node = stack.back();
        stack.pop_back();
        for (size_t k = 0; k < node->keys.size(); ++k)
            fn(node->keys[k], k == 0 ? node->before : node->keys[k - 1], chunk(node->tokens, k), node->pages[k]);
        for (const auto& [h, child] : node->children) stack.push_back(child.get());
    }
}

int32_t RadixCache::evictable_pages() const {
    // Pre-order list; walking it backwards visits every node after all its descendants.
    std::vector<std::pair<const Node*, size_t>> order;  // node, parent index
    for (const auto& [ns, root] : roots_) {
        const size_t root_index = order.size();
        order.emplace_back(root.get(), root_index);
        for (size_t k = root_index; k < order.size(); ++k) {
            const Node* node = order[k].first;
            for (const auto& [h, child] : node->children) order.emplace_back(child.get(), k);
            for (const auto& tail : node->tails) order.emplace_back(tail.get(), k);
        }
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

} // namespace arbor::kv
