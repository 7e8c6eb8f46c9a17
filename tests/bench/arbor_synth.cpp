// arbor-synth: writes a synthetic model (synthetic_model.h) of a named shape and weight
// type with seeded random weights, for tests and benchmarks without a download.
#include "synthetic_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

using arbor::synth::SyntheticSpec;

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : "|") + n;
    return out;
}

void usage() {
    std::fprintf(stderr,
                 "usage: arbor-synth --shape %s --type %s --out FILE.gguf\n"
                 "                   [--arch llama|qwen2|qwen3|qwen3moe|gemma3|smollm3|phi3|mistral3|gpt-oss (default: the shape's)]\n"
                 "                   [--seed N] [--tied|--untied]\n"
                 "                   [--threads N] [--layers N] [--embd N] [--heads N] [--kv-heads N] [--head-dim N]\n"
                 "                   [--ff N] [--vocab N] [--window N (gemma3's and gpt-oss's sliding window)]\n"
                 "                   [--yarn FACTOR (YaRN RoPE scaling beyond the shape's context)]\n"
                 "                   [--rope-dims N (phi3: rotate the first N of each head)]\n"
                 "                   [--longrope N (phi3: LongRoPE factors beyond an original context of N)]\n"
                 "                   [--experts N] [--experts-used N] [--expert-ff N (qwen3moe's and gpt-oss's experts)]\n"
                 "                   [--ctx N (trained context; YaRN's original one)]\n",
                 joined(arbor::synth::shape_names()).c_str(), joined(arbor::synth::weight_type_names()).c_str());
}

// Options that replace one size of the named shape.
const std::pair<std::string_view, int arbor::synth::Shape::*> kSizeOptions[] = {
    {"--layers", &arbor::synth::Shape::n_layer}, {"--embd", &arbor::synth::Shape::n_embd},
    {"--heads", &arbor::synth::Shape::n_head},   {"--kv-heads", &arbor::synth::Shape::n_head_kv},
    {"--head-dim", &arbor::synth::Shape::head_dim}, {"--ff", &arbor::synth::Shape::n_ff},
    {"--vocab", &arbor::synth::Shape::n_vocab},     {"--window", &arbor::synth::Shape::sliding_window},
    {"--yarn", &arbor::synth::Shape::yarn_factor},  {"--rope-dims", &arbor::synth::Shape::rope_dims},
    {"--experts", &arbor::synth::Shape::n_expert},  {"--experts-used", &arbor::synth::Shape::n_expert_used},
    {"--expert-ff", &arbor::synth::Shape::expert_ff}, {"--ctx", &arbor::synth::Shape::n_ctx_train},
    {"--longrope", &arbor::synth::Shape::longrope_ctx},
};

// Returns an empty string on success, else what was wrong.
std::string parse(int argc, char** argv, SyntheticSpec& spec, std::string& out) {
    std::string shape, type;
    std::vector<std::pair<int arbor::synth::Shape::*, int>> sizes;  // applied once the shape is known
    std::optional<bool> tied;
    std::optional<arbor::synth::Arch> arch;  // else the shape's
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        auto number = [&](long most, long& v) {
            if (!has_value) return false;
            char* end = nullptr;
            v = std::strtol(argv[++i], &end, 10);
            return *end == '\0' && v >= 1 && v <= most;
        };
        long v = 0;
        const auto size_option = std::find_if(std::begin(kSizeOptions), std::end(kSizeOptions),
                                              [&](const auto& o) { return o.first == a; });
        if (size_option != std::end(kSizeOptions)) {
            if (!number(1 << 20, v)) return a + " takes 1..1048576";
            sizes.emplace_back(size_option->second, int(v));
        }
        else if (a == "--shape" && has_value) shape = argv[++i];
        else if (a == "--type" && has_value) type = argv[++i];
        else if (a == "--out" && has_value) out = argv[++i];
        else if (a == "--arch" && has_value) {
            arch = arbor::synth::arch_named(argv[++i]);
            if (!arch) return std::string("unknown architecture '") + argv[i] + "'";
        }
        else if (a == "--seed") {
            char* end = nullptr;
            if (has_value) spec.seed = std::strtoull(argv[++i], &end, 10);
            if (!end || *end != '\0' || argv[i][0] == '-' || argv[i][0] == '\0') return "--seed takes an unsigned integer";
        }
        else if (a == "--tied" || a == "--untied") tied = a == "--tied";
        else if (a == "--threads") { if (!number(1024, v)) return "--threads takes 1..1024"; spec.threads = int(v); }
        else return "unknown or incomplete option '" + a + "'";
    }
    if (shape.empty() || type.empty() || out.empty()) return "--shape, --type and --out are required";
    const auto s = arbor::synth::shape_named(shape);
    if (!s) return "unknown shape '" + shape + "'";
    const auto t = arbor::synth::weight_types_named(type);
    if (!t) return "unknown type '" + type + "'";
    spec.shape = *s;
    spec.types = *t;
    for (auto [field, value] : sizes) spec.shape.*field = value;
    if (tied) spec.shape.tied = *tied;
    spec.arch = arch.value_or(spec.shape.arch);
    return "";
}

} // namespace

int main(int argc, char** argv) {
    SyntheticSpec spec;
    std::string out;
    if (const std::string problem = parse(argc, argv, spec, out); !problem.empty()) {
        std::fprintf(stderr, "arbor-synth: %s\n", problem.c_str());
        usage();
        return 2;
    }
    try {
        const auto r = arbor::synth::write_synthetic_model(spec, out);
        std::printf("%s: %s %s %s, %.1f MB in %.1f s\n", out.c_str(), spec.shape.name.c_str(),
                    std::string(arbor::synth::arch_name(spec.arch)).c_str(), spec.types.name.c_str(),
                    double(r.bytes) / 1e6, r.seconds);
        return 0;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "arbor-synth: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "arbor-synth: error: %s\n", e.what());
        return 1;
    }
}
