// Whether a model fits in memory: its weights (the file, mapped whole) plus the KV cache
// of the chosen context against the memory the system has available. An estimate before
// a download and in the library; the engine itself may hold less KV (its memory budget
// and disk tier bound what stays resident).
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace arbor::app {

enum class FitVerdict { Fits, Tight, WillNotFit, Unknown };

struct FitEstimate {
    FitVerdict verdict = FitVerdict::Unknown;
    uint64_t weightBytes = 0;
    uint64_t kvBytes = 0;
    uint64_t availableBytes = 0;
    uint64_t neededBytes() const { return weightBytes + kvBytes; }
};

// Headroom: a model needing up to this share of the available memory fits; up to all of
// it is tight (the rest of the system is squeezed); beyond it will not fit.
inline constexpr double kComfortableShare = 0.8;

// Bytes of one KV element of the engine's KV type ("f16", "f32", "q8_0": 34 bytes per
// block of 32); nullopt for another name.
std::optional<double> kvElementBytes(std::string_view kvType);

// K and V for `contextTokens` tokens in each of `layers` layers of `kvDim` elements.
uint64_t kvCacheBytes(int32_t layers, int32_t kvDim, int64_t contextTokens, double elementBytes);

FitEstimate estimateFit(uint64_t weightBytes, uint64_t kvBytes, uint64_t availableBytes);

// MemAvailable from a /proc/meminfo text, in bytes; nullopt when absent or malformed.
std::optional<uint64_t> memAvailableFromMeminfo(std::string_view meminfo);
// The same, read from the file (default: this system's).
std::optional<uint64_t> availableMemoryBytes(const std::filesystem::path& meminfo = "/proc/meminfo");

struct AmountUnit {
    double size;
    const char* suffix;
};
// `value` in the largest of `units` (largest first) it reaches, with one decimal below 10
// ("1.5B", "4.9 GB") and none above ("135M", "138 MB"); "" when it reaches none.
std::string quotedAmount(uint64_t value, std::initializer_list<AmountUnit> units);

// "1.2 GB", "350 MB", "900 KB": decimal units, as file managers and the Hub show sizes.
std::string byteSizeText(uint64_t bytes);
// "fits", "tight", "will not fit", "unknown".
std::string_view verdictName(FitVerdict verdict);
// A sentence with the numbers: "Fits: needs 1.2 GB (weights 0.9 GB + KV 0.3 GB for 4096
// tokens) of 7.5 GB available."
std::string fitText(const FitEstimate& fit, int64_t contextTokens);

} // namespace arbor::app
