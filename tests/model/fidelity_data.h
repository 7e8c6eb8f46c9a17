// Helpers shared by the suites that read tests/data/fidelity (token id arrays) and
// compare greedy choices.
#pragma once

#include "arbor/tokenizer.h"

#include <QJsonArray>
#include <QJsonValue>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace arbor::test {

inline std::vector<TokenId> ids_of(const QJsonValue& v) {
    std::vector<TokenId> out;
    for (const auto& x : v.toArray()) out.push_back(TokenId(x.toInt()));
    return out;
}

inline int32_t argmax(const float* logits, int32_t n) {
    return int32_t(std::max_element(logits, logits + n) - logits);
}

} // namespace arbor::test
