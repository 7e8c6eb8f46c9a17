#include "cpu_info.h"

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace arbor::bench {

std::string cpu_description() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model;
    std::set<std::string> flags;
    while (std::getline(in, line)) {
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
        if (key == "model name" && model.empty()) model = value;
        if (key == "flags" && flags.empty()) {
            std::istringstream words(value);
            for (std::string w; words >> w;) flags.insert(w);
        }
    }
    std::string out = (model.empty() ? "unknown CPU" : model) + ", " +
                      std::to_string(std::thread::hardware_concurrency()) + " CPUs";
    if (flags.empty()) return out;
    std::string has, lacks;
    for (const char* f : {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "avx_vnni",
                          "amx_tile", "amx_int8"})
        (flags.count(f) ? has : lacks) += std::string(" ") + f;
    return out + "; has" + (has.empty() ? " none of" : has) + (lacks.empty() ? "" : "; lacks" + lacks);
}

} // namespace arbor::bench
