// arbor-json-bench: time of the API's JSON parser on 4 MiB documents (the API's body
// limit) of the shapes that cost a parser most: many keys (also sharing long prefixes),
// nesting to the depth limit, long strings (plain, escaped, multibyte), many numbers, and
// many small objects. Prints the median and best wall time of --repetitions parses per
// shape, the median CPU time (the process's, which leaves out time the parse waited for a
// core on a busy machine) and the median count of page faults per parse (first touches of
// fresh memory). On a busy machine, `chrt -f 10 arbor-json-bench` (as root) gives wall
// times without the waits for a core.
#include "api/json.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace {

constexpr size_t kTarget = 4u << 20;

// "{" + pieces joined by "," + "}" (or with brackets), stopping before kTarget bytes.
std::string fill(const char* open, const char* close, const std::function<std::string(size_t)>& piece) {
    std::string out = open;
    for (size_t i = 0;; ++i) {
        std::string p = (i ? "," : "") + piece(i);
        if (out.size() + p.size() + std::strlen(close) > kTarget) break;
        out += p;
    }
    return out + close;
}

std::string padded(size_t i, size_t width) {
    std::string s = std::to_string(i);
    return std::string(width - std::min(width, s.size()), '0') + s;
}

// A nest of `levels` arrays and objects ending in a number: [{"a":[{"a":...1...}]}].
std::string nest(int levels) {
    std::string open, close;
    for (int d = 0; d < levels; ++d) {
        open += d % 2 ? "{\"a\":" : "[";
        close.insert(0, d % 2 ? "}" : "]");
    }
    return open + "1" + close;
}

std::string long_string(const std::string& unit) {
    std::string s = "{\"s\":\"";
    while (s.size() + unit.size() + 2 <= kTarget) s += unit;
    return s + "\"}";
}

struct Shape {
    const char* name;
    std::string text;
};

std::vector<Shape> shapes() {
    const std::string prefix(92, 'p');
    return {
        {"keys", fill("{", "}", [](size_t i) { return "\"k" + padded(i, 7) + "\":0"; })},
        {"keys-long-prefix", fill("{", "}", [&](size_t i) { return "\"" + prefix + padded(i, 8) + "\":0"; })},
        {"nested-to-limit", fill("[", "]", [](size_t) { return nest(63); })},  // 64 levels with the outer array
        {"string-ascii", long_string("The quick brown fox jumps over the lazy dog. ")},
        {"string-escapes", long_string("\\u00e9\\n\\\"\\\\\\ud83d\\ude00")},
        {"string-utf8", long_string("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80")},
        {"numbers", fill("[", "]", [](size_t i) {
             return i % 3 == 0 ? std::to_string(int64_t(i) * 7919 - 50000000)
                               : (i % 3 == 1 ? "1.2345678901234567e-" + std::to_string(i % 300) : "-0.5");
         })},
        {"small-objects", fill("[", "]", [](size_t) { return std::string("{\"role\":\"user\",\"content\":\"Hi there!\"}"); })},
    };
}

long minor_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

} // namespace

int main(int argc, char** argv) {
    int repetitions = 7;
    std::string only;  // one shape's name; empty: all
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--repetitions") == 0 && i + 1 < argc) {
            repetitions = std::max(1, std::atoi(argv[++i]));
        } else if (std::strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
            only = argv[++i];
        } else {
            std::fputs("usage: arbor-json-bench [--repetitions N] [--shape NAME]\n", stderr);
            return 2;
        }
    }
    arbor::api::JsonParseLimits limits;
    limits.max_bytes = kTarget;  // as the API parses request bodies
    std::printf("%-18s %9s %10s %8s %11s %11s %9s\n", "shape", "bytes", "median_ms", "best_ms", "cpu_med_ms",
                "faults_med", "MiB/s");
    for (const auto& shape : shapes()) {
        if (!only.empty() && only != shape.name) continue;
        std::vector<double> wall, cpu;
        std::vector<long> faults;
        for (int r = 0; r < repetitions; ++r) {
            const long f0 = minor_faults();
            const std::clock_t c0 = std::clock();
            const auto t0 = std::chrono::steady_clock::now();
            const arbor::api::Json v = arbor::api::Json::parse(shape.text, limits);
            wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            cpu.push_back(1000.0 * double(std::clock() - c0) / CLOCKS_PER_SEC);
            faults.push_back(minor_faults() - f0);
            if (v.is_null()) return 1;  // keeps the parse from being optimized away
        }
        std::sort(wall.begin(), wall.end());
        std::sort(cpu.begin(), cpu.end());
        std::sort(faults.begin(), faults.end());
        const double median = wall[wall.size() / 2];
        std::printf("%-18s %9zu %10.1f %8.1f %11.1f %11ld %9.0f\n", shape.name, shape.text.size(), median,
                    wall.front(), cpu[cpu.size() / 2], faults[faults.size() / 2],
                    double(shape.text.size()) / (1 << 20) / (median / 1000.0));
    }
    return 0;
}
