// Identity of a model's weights for the prefix cache and the disk tier: a hash of the
// GGUF file's metadata, its tensor table (names, types, shapes, offsets) and samples of
// every tensor's bytes (start, middle and end), not of its path, so that a copied or
// moved file keeps its cached pages and an edited one loses them. Not a hash of every
// weight byte (that would read the whole file at every start).
#pragma once

#include "arbor/model.h"
#include "kv/page_key.h"

namespace arbor::sched {

// long_rope_factors: a LongRoPE model run with its long factors (Backend::
// rope_long_factors) is another model to the cache, its keys being rotated otherwise.
kv::PageKey model_fingerprint(const Model& model, bool long_rope_factors = false);

} // namespace arbor::sched
