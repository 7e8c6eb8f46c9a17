#include "synthetic_cache.h"

#include "synthetic_model.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace arbor::synth {

std::filesystem::path synthetic_cache_dir() {
    // XDG says relative values are invalid and must be ignored.
    std::filesystem::path base;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') base = xdg;
    else if (const char* home = std::getenv("HOME"); home && *home) base = std::filesystem::path(home) / ".cache";
    else base = ".cache";
    return base / "arbor" / "synthetic";
}

std::filesystem::path cached_synthetic_model(std::string_view shape_and_type,
                                             const std::function<void(const std::filesystem::path&)>& on_write) {
    const size_t colon = shape_and_type.find(':');
    const std::string_view shape_name = shape_and_type.substr(0, colon);
    const std::string_view type_name = colon == std::string_view::npos ? "" : shape_and_type.substr(colon + 1);
    const auto shape = shape_named(shape_name);
    const auto types = weight_types_named(type_name);
    if (!shape || !types)
        throw std::invalid_argument("synthetic model '" + std::string(shape_and_type) +
                                    "' is not SHAPE:TYPE with a known shape and type");
    SyntheticSpec spec;
    spec.shape = *shape;
    spec.types = *types;
    const std::filesystem::path path = synthetic_cache_dir() / (spec.shape.name + "-" + spec.types.name + "-seed" +
                                                                std::to_string(spec.seed) + "-v" +
                                                                std::to_string(kGeneratorVersion) + ".gguf");
    if (std::filesystem::exists(path)) return path;  // complete: files appear by rename
    std::filesystem::create_directories(path.parent_path());
    if (on_write) on_write(path);
    write_synthetic_model(spec, path);
    return path;
}

} // namespace arbor::synth
