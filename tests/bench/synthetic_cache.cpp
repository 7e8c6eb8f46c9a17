#include "synthetic_cache.h"

#include "synthetic_model.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace arbor::synth {

std::filesystem::path synthetic_cache_dir() {
    // XDG says relative values are invalid and must be ignored.
    std::filesystem::path base;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') base = xdg;
    else if (const char* home = std::getenv("HOME"); home && *home) base = std::filesystem::path(home) / ".cache";
    else base = ".cache";
    return base / "arbor" / "synthetic";
}

std::filesystem::path cached_synthetic_model(std::string_view text,
                                             const std::function<void(const std::filesystem::path&)>& on_write) {
    std::vector<std::string_view> parts;  // SHAPE, TYPE[, ARCH]
    for (size_t start = 0;;) {
        const size_t colon = text.find(':', start);
        parts.push_back(text.substr(start, colon - start));
        if (colon == std::string_view::npos) break;
        start = colon + 1;
    }
    const auto shape = shape_named(parts[0]);
    const auto types = parts.size() >= 2 ? weight_types_named(parts[1]) : std::nullopt;
    const auto arch = parts.size() == 3 ? arch_named(parts[2])
                                        : std::optional<Arch>(shape ? shape->arch : Arch::Llama);
    if (!shape || !types || !arch || parts.size() > 3)
        throw std::invalid_argument("synthetic model '" + std::string(text) +
                                    "' is not SHAPE:TYPE[:ARCH] with a known shape, type and architecture");
    SyntheticSpec spec;
    spec.shape = *shape;
    spec.types = *types;
    spec.arch = *arch;
    const std::string arch_part = *arch == shape->arch ? "" : "-" + std::string(arch_name(*arch));
    const std::filesystem::path path = synthetic_cache_dir() / (spec.shape.name + "-" + spec.types.name + arch_part +
                                                                "-seed" + std::to_string(spec.seed) + "-v" +
                                                                std::to_string(kGeneratorVersion) + ".gguf");
    if (std::filesystem::exists(path)) return path;  // complete: files appear by rename
    std::filesystem::create_directories(path.parent_path());
    if (on_write) on_write(path);
    write_synthetic_model(spec, path);
    return path;
}

} // namespace arbor::synth
