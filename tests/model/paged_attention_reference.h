// A naive paged attention, the definition the CPU backend's attention (cpu_attention.h)
// must compute, for tests only.
#pragma once

#include "arbor/backend.h"
#include "arbor/model.h"
#include "model/kv_pages.h"

#include <vector>

namespace arbor::test {

// Every row's attention output (rows x n_head * head_dim) in layer `layer`, from its
// query heads q (rows x n_head * head_dim), over the K/V that kv holds for the batch's
// sequences.
std::vector<float> reference_paged_attention(const ModelConfig& cfg, const KvPages& kv, const ForwardBatch& batch,
                                             int32_t layer, const float* q);

} // namespace arbor::test
