// What the model library shows about one GGUF file, read from its header alone: the
// metadata and the tensor table are parsed, the weights are never touched.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace arbor::app {

struct ModelFileInfo {
    std::filesystem::path path;
    uint64_t fileSize = 0;
    std::string name;           // general.name, else the file name without .gguf
    std::string architecture;   // general.architecture; empty when the header is unreadable
    uint64_t parameterCount = 0;  // elements of all tensors
    std::string quantType;      // general.file_type's name, else the type holding most weights
    int64_t contextLength = 0;  // tokens the model was trained with; 0 when unknown
    // For the KV cache estimate: 0 when the engine cannot read the configuration.
    int32_t layers = 0;
    int32_t kvDim = 0;          // key (and value) elements per token per layer
    // Whether the engine can load it, and when not, why (or why the header is unreadable).
    bool supported = false;
    std::string problem;
};

// Never throws: a file whose header cannot be read comes back unsupported, with the reason.
ModelFileInfo readModelFileInfo(const std::filesystem::path& path);

// The name llama.cpp gives a general.file_type value ("Q4_K_M"), or "" for an unknown one.
std::string fileTypeName(uint64_t fileType);

// "135M", "1.5B", "27B": a parameter count as people quote it.
std::string parameterCountText(uint64_t count);

} // namespace arbor::app
