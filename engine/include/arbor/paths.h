// Where Arbor keeps its files, following the XDG base directory specification.
#pragma once

#include <filesystem>
#include <string_view>

namespace arbor {

// File name of the default model (SmolLM2-135M-Instruct, Q4_1) in the models directory.
inline constexpr std::string_view kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// Appended to "not found" errors for the default model: how a user installs it.
inline constexpr std::string_view kDefaultModelInstallHint =
    "install the default model with arbor-download-model (in a source tree: build/app/download/arbor-download-model)";

// $XDG_DATA_HOME/arbor, or ~/.local/share/arbor.
std::filesystem::path data_dir();
std::filesystem::path models_dir();
// $XDG_CACHE_HOME/arbor, or ~/.cache/arbor.
std::filesystem::path cache_dir();
// cache_dir()/kv: the KV disk tier's pages.
std::filesystem::path kv_disk_dir();
// cache_dir()/api-namespace-key: the key of the API clients' cache namespaces, kept
// beside the pages it lets a restarted server find.
std::filesystem::path api_namespace_key_file();
// $ARBOR_MODEL when set, else models_dir()/kDefaultModelFile.
std::filesystem::path default_model_path();

} // namespace arbor
