// The arbor-cli sub-commands. Each returns the process exit status and throws
// UsageError or arbor::Error for bad input.
#pragma once

#include <string>
#include <vector>

namespace arbor::cli {

int run_generate(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_chat(const std::vector<std::string>& args);

} // namespace arbor::cli
