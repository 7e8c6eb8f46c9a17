// The one exception type the engine throws for bad input (files, arguments, requests).
// Callers at API boundaries catch it and report what() to the user; it never escapes
// as a crash.
#pragma once

#include <stdexcept>
#include <string>

namespace arbor {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace arbor
