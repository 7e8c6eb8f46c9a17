// GGUF files for the model library's tests, written with the tests' GGUF writer so that
// every value the library reports is known here, not read back from the code under test.
#pragma once

#include "gguf_test_writer.h"

#include <filesystem>
#include <string>

namespace arbor::test {

// A llama-architecture header the engine accepts: 3 layers, 64 wide, 4 heads of 16 of
// which 2 are KV heads (KV dim 32), trained for `context` tokens, general.file_type
// `fileType` (15: Q4_K_M) unless negative. Tensors: a [64, 10] F16, a [64, 4] F32 and a
// [64] F32: 960 parameters, F16 holding most of them.
inline GgufWriter llamaHeader(const std::string& name, int context = 2048, int fileType = 15) {
    GgufWriter w;
    w.add("general.architecture", gv::str("llama"));
    w.add("general.name", gv::str(name));
    if (fileType >= 0) w.add("general.file_type", gv::u32(uint32_t(fileType)));
    w.add("llama.block_count", gv::u32(3));
    w.add("llama.embedding_length", gv::u32(64));
    w.add("llama.feed_forward_length", gv::u32(128));
    w.add("llama.attention.head_count", gv::u32(4));
    w.add("llama.attention.head_count_kv", gv::u32(2));
    w.add("llama.context_length", gv::u32(uint32_t(context)));
    w.add_tensor({"token_embd.weight", 1, {64, 10}, pattern_bytes(64 * 10 * 2, 1)});
    w.add_tensor({"output.weight", 0, {64, 4}, pattern_bytes(64 * 4 * 4, 2)});
    w.add_tensor({"output_norm.weight", 0, {64}, pattern_bytes(64 * 4, 3)});
    return w;
}

inline void writeGguf(const std::filesystem::path& path, const GgufWriter& w) { write_file(path, w.bytes()); }

} // namespace arbor::test
