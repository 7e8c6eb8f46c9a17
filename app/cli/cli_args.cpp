#include "cli_args.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>

namespace arbor::cli {

CliArgs::CliArgs(const std::vector<std::string>& args, std::set<std::string> valued, std::set<std::string> flags) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (valued.count(a)) {
            if (i + 1 >= args.size()) throw UsageError("option " + a + " needs a value");
            values_[a] = args[++i];
        } else if (flags.count(a)) {
            values_[a] = "";
        } else {
            throw UsageError("unknown argument '" + a + "'");
        }
    }
}

std::optional<std::string> CliArgs::get(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::string CliArgs::get_or(const std::string& name, const std::string& fallback) const {
    return get(name).value_or(fallback);
}

int64_t CliArgs::get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
    const auto v = get(name);
    if (!v) return fallback;
    int64_t out = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (ec != std::errc() || end != v->data() + v->size())
        throw UsageError("option " + name + " expects an integer, got '" + *v + "'");
    if (out < min || out > max)
        throw UsageError("option " + name + " must be between " + std::to_string(min) + " and " + std::to_string(max));
    return out;
}

double CliArgs::get_double(const std::string& name, double fallback, double min, double max) const {
    const auto v = get(name);
    if (!v) return fallback;
    char* end = nullptr;
    const double out = std::strtod(v->c_str(), &end);
    if (v->empty() || end != v->c_str() + v->size() || out != out)
        throw UsageError("option " + name + " expects a number, got '" + *v + "'");
    if (out < min || out > max)
        throw UsageError("option " + name + " must be between " + std::to_string(min) + " and " + std::to_string(max));
    return out;
}

uint64_t CliArgs::get_u64(const std::string& name, uint64_t fallback) const {
    const auto v = get(name);
    if (!v) return fallback;
    uint64_t out = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    if (ec != std::errc() || end != v->data() + v->size())
        throw UsageError("option " + name + " expects a non-negative integer, got '" + *v + "'");
    return out;
}

} // namespace arbor::cli
