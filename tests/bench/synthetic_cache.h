// Synthetic models kept between runs: arbor-bench --synthetic SHAPE:TYPE benchmarks the
// file of that name in the cache, written on first use.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>

namespace arbor::synth {

// $XDG_CACHE_HOME/arbor/synthetic, or ~/.cache/arbor/synthetic.
std::filesystem::path synthetic_cache_dir();

// The model of `spec` ("SHAPE:TYPE" or "SHAPE:TYPE:ARCH", e.g. "1b:q4_k" or
// "1b:q4_k:qwen3"; without ARCH the shape's own architecture, seed 1) in the cache, at
// SHAPE-TYPE-seed1-vVERSION.gguf (SHAPE-TYPE-ARCH-... when ARCH is not the shape's);
// written first when absent (`on_write` is told the path before). Throws
// std::invalid_argument for an unknown shape, type or architecture.
std::filesystem::path cached_synthetic_model(std::string_view spec,
                                             const std::function<void(const std::filesystem::path&)>& on_write = {});

} // namespace arbor::synth
