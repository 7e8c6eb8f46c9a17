// Command-line option parsing for arbor-cli: "--name value", "--flag", "-n value".
// Anything unknown, a missing value or a malformed number is a UsageError.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace arbor::cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class CliArgs {
public:
    // valued: options that take a value; flags: options that do not.
    CliArgs(const std::vector<std::string>& args, std::set<std::string> valued, std::set<std::string> flags);

    bool has(const std::string& name) const { return values_.count(name) != 0; }
    std::optional<std::string> get(const std::string& name) const;
    std::string get_or(const std::string& name, const std::string& fallback) const;
    int64_t get_int(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
    double get_double(const std::string& name, double fallback, double min, double max) const;
    uint64_t get_u64(const std::string& name, uint64_t fallback) const;

private:
    std::map<std::string, std::string> values_;
};

} // namespace arbor::cli
