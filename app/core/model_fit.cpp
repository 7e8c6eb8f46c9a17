#include "model_fit.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace arbor::app {

std::optional<double> kvElementBytes(std::string_view kvType) {
    if (kvType == "f16") return 2.0;
    if (kvType == "f32") return 4.0;
    if (kvType == "q8_0") return 34.0 / 32.0;
    return std::nullopt;
}

uint64_t kvCacheBytes(int32_t layers, int32_t kvDim, int64_t contextTokens, double elementBytes) {
    if (layers <= 0 || kvDim <= 0 || contextTokens <= 0) return 0;
    const double elements = 2.0 * double(layers) * double(kvDim) * double(contextTokens);
    return uint64_t(elements * elementBytes + 0.5);
}

FitEstimate estimateFit(uint64_t weightBytes, uint64_t kvBytes, uint64_t availableBytes) {
    FitEstimate fit{FitVerdict::Unknown, weightBytes, kvBytes, availableBytes};
    if (availableBytes == 0) return fit;
    const double needed = double(fit.neededBytes());
    fit.verdict = needed <= kComfortableShare * double(availableBytes) ? FitVerdict::Fits
                  : needed <= double(availableBytes)                  ? FitVerdict::Tight
                                                                      : FitVerdict::WillNotFit;
    return fit;
}

std::optional<uint64_t> memAvailableFromMeminfo(std::string_view meminfo) {
    constexpr std::string_view key = "MemAvailable:";
    const size_t at = meminfo.find(key);
    if (at == std::string_view::npos || (at > 0 && meminfo[at - 1] != '\n')) return std::nullopt;
    size_t i = at + key.size();
    while (i < meminfo.size() && meminfo[i] == ' ') ++i;
    uint64_t kib = 0;
    const auto [end, ec] = std::from_chars(meminfo.data() + i, meminfo.data() + meminfo.size(), kib);
    if (ec != std::errc() || end == meminfo.data() + i) return std::nullopt;
    // The kernel writes every value in kB (KiB).
    const std::string_view unit = meminfo.substr(size_t(end - meminfo.data())).substr(0, 3);
    if (unit != " kB") return std::nullopt;
    return kib * 1024;
}

std::optional<uint64_t> availableMemoryBytes(const std::filesystem::path& meminfo) {
    std::ifstream in(meminfo);
    if (!in) return std::nullopt;
    std::stringstream text;
    text << in.rdbuf();
    return memAvailableFromMeminfo(text.str());
}

std::string quotedAmount(uint64_t value, std::initializer_list<AmountUnit> units) {
    for (const AmountUnit& u : units) {
        if (double(value) < u.size) continue;
        const double v = double(value) / u.size;
        char text[32];
        std::snprintf(text, sizeof text, v < 10 ? "%.1f%s" : "%.0f%s", v, u.suffix);
        return text;
    }
    return {};
}

std::string byteSizeText(uint64_t bytes) {
    const std::string text = quotedAmount(bytes, {{1e9, " GB"}, {1e6, " MB"}, {1e3, " KB"}});
    return text.empty() ? std::to_string(bytes) + " B" : text;
}

std::string_view verdictName(FitVerdict verdict) {
    switch (verdict) {
    case FitVerdict::Fits: return "fits";
    case FitVerdict::Tight: return "tight";
    case FitVerdict::WillNotFit: return "will not fit";
    case FitVerdict::Unknown: break;
    }
    return "unknown";
}

std::string fitText(const FitEstimate& fit, int64_t contextTokens) {
    std::string verdict(verdictName(fit.verdict));
    verdict[0] = char(std::toupper(static_cast<unsigned char>(verdict[0])));
    std::string text = verdict + ": needs " + byteSizeText(fit.neededBytes()) + " (weights " +
                       byteSizeText(fit.weightBytes) + " + KV " + byteSizeText(fit.kvBytes) + " for " +
                       std::to_string(contextTokens) + " tokens)";
    if (fit.verdict == FitVerdict::Unknown) return text + "; the available memory is unknown.";
    return text + " of " + byteSizeText(fit.availableBytes) + " available.";
}

} // namespace arbor::app
