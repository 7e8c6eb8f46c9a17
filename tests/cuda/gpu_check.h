// A small harness for the GPU suites, which are plain programs (no Qt) so that an
// engine-only build runs them on a GPU machine without Qt. Each check prints a line;
// the program ends with "N passed, N failed" and exits 1 on a failure, or exits 77
// (reported by CTest as skipped) with the reason when there is no usable CUDA device.
#pragma once

#include <cstdio>
#include <string>

namespace arbor::gpu_check {

struct Checks {
    int passed = 0, failed = 0;

    bool expect(bool ok, const std::string& what) {
        std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what.c_str());
        std::fflush(stdout);
        ok ? ++passed : ++failed;
        return ok;
    }
    int finish() const {
        std::printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
};

constexpr int kSkipped = 77;

inline int skip(const std::string& why) {
    std::printf("SKIP: %s\n", why.c_str());
    return kSkipped;
}

} // namespace arbor::gpu_check
