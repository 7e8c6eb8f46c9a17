// A read-only trie over byte strings, for the tokenizers that match vocabulary pieces
// against text byte by byte (Unigram's Viterbi search, RWKV's greedy longest match).
// Built once from (key, id) pairs; compact (edges in one sorted array per node, the
// root's children in a table) because a vocabulary has up to a few hundred thousand keys.
#pragma once

#include "arbor/tokenizer.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace arbor::tok {

class ByteTrie {
public:
    using Node = uint32_t;
    static constexpr Node kRoot = 0;
    static constexpr Node kNone = UINT32_MAX;

    // Empty keys are skipped. When two keys are equal the one given later keeps the node,
    // as the reference inserts tokens in id order, each overwriting the last.
    explicit ByteTrie(std::vector<std::pair<std::string_view, TokenId>> keys = {}) {
        std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        struct Edge {
            Node parent, child;
            unsigned char byte;
        };
        std::vector<Edge> edges;
        value_.assign(1, -1);
        // path[d]: the node of the previous key's first d bytes. Keys come sorted, so a
        // node's children are created in increasing byte order and each prefix once.
        std::vector<Node> path{kRoot};
        std::string_view prev;
        for (const auto& [key, id] : keys) {
            if (key.empty()) continue;
            size_t common = 0;
            while (common < prev.size() && common < key.size() && prev[common] == key[common]) ++common;
            path.resize(common + 1);
            for (size_t d = common; d < key.size(); ++d) {
                const auto node = static_cast<Node>(value_.size());
                value_.push_back(-1);
                edges.push_back({path[d], node, static_cast<unsigned char>(key[d])});
                path.push_back(node);
            }
            value_[path[key.size()]] = id;
            prev = key;
        }
        // Group the edges by parent (a stable counting sort keeps each group in byte order).
        first_.assign(value_.size() + 1, 0);
        for (const Edge& e : edges) ++first_[e.parent + 1];
        for (size_t n = 1; n < first_.size(); ++n) first_[n] += first_[n - 1];
        byte_.resize(edges.size());
        child_.resize(edges.size());
        std::vector<uint32_t> fill(first_.begin(), first_.end() - 1);
        for (const Edge& e : edges) {
            const uint32_t at = fill[e.parent]++;
            byte_[at] = e.byte;
            child_[at] = e.child;
        }
        root_.fill(kNone);
        for (uint32_t at = first_[kRoot]; at < first_[kRoot + 1]; ++at) root_[byte_[at]] = child_[at];
    }

    // The node reached from `node` by byte `c`, or kNone.
    Node child(Node node, unsigned char c) const {
        if (node == kRoot) return root_[c];
        const auto begin = byte_.begin() + first_[node], end = byte_.begin() + first_[node + 1];
        const auto it = std::lower_bound(begin, end, c);
        return it != end && *it == c ? child_[static_cast<size_t>(it - byte_.begin())] : kNone;
    }

    // The id of the key that ends at `node`, or -1.
    TokenId value(Node node) const { return value_[node]; }

private:
    std::vector<TokenId> value_;   // per node
    std::vector<uint32_t> first_;  // edges of node n: [first_[n], first_[n + 1])
    std::vector<unsigned char> byte_;
    std::vector<Node> child_;
    std::array<Node, 256> root_{};
};

} // namespace arbor::tok
