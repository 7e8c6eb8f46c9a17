// Where Arbor keeps its files, following the XDG base directory specification.
#pragma once

#include <filesystem>
#include <string_view>

namespace arbor {

// File name of the default model (SmolLM2-135M-Instruct, Q4_1) in the models directory.
inline constexpr std::string_view kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $XDG_DATA_HOME/arbor, or ~/.local/share/arbor.
std::filesystem::path data_dir();
std::filesystem::path models_dir();
// $ARBOR_MODEL when set, else models_dir()/kDefaultModelFile.
std::filesystem::path default_model_path();

} // namespace arbor
