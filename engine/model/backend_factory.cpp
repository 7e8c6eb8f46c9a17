// Chooses the backend that BackendOptions::device names. The CUDA backend is a library
// of its own (libarbor_cuda.so, linked with the CUDA runtime and cuBLAS), opened
// (cuda_library.cpp) only when asked for, so that a machine without CUDA never loads them.
#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/model.h"
#include "cuda_library.h"

#include <spdlog/spdlog.h>

#include <string>

namespace arbor {
namespace {

// "cuda" -> 0, "cuda:N" -> N; -1 when device does not name CUDA.
int cuda_ordinal(std::string_view device) {
    if (device == "cuda") return 0;
    if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return -1;
    int n = 0;
    for (char c : device.substr(5)) {
        if (c < '0' || c > '9' || n > 1000) return -1;
        n = n * 10 + (c - '0');
    }
    return n;
}

} // namespace

std::string device_name_problem(std::string_view device) {
    if (device == "auto" || device == "cpu" || cuda_ordinal(device) >= 0) return {};
    return "unknown device '" + std::string(device) + "' (expected auto, cpu, cuda or cuda:N)";
}

std::unique_ptr<Backend> make_backend(const Model& model, const BackendOptions& options, std::string* fallback) {
    if (fallback) fallback->clear();
    const std::string& device = options.device;
    if (device.empty() || device == "cpu") return make_cpu_backend(model, options);
    if (std::string problem = device_name_problem(device); !problem.empty()) throw Error(problem);
    const bool automatic = device == "auto";
    const int ordinal = automatic ? 0 : cuda_ordinal(device);
    std::string why;
    try {
        // Refused before the library is loaded, so the reason is the same on every machine.
        if (std::string refusal = cuda_kv_type_refusal(options.kv_type); !refusal.empty()) throw Error(refusal);
        // Counted first, so that no driver or no device is said as such (as the app's
        // device list says it), not as the failure of the first CUDA call.
        if (const int count = cuda_device_count(why); count > ordinal)
            return std::unique_ptr<Backend>(cuda_library().create(&model, &options, ordinal));
        else if (count > 0)
            why = "there is no GPU " + std::to_string(ordinal) + " (" + std::to_string(count) + " found)";
    } catch (const Error& e) {
        why = e.what();
    } catch (const std::exception& e) {
        why = std::string("CUDA backend failed: ") + e.what();
    }
    if (!automatic && !options.cpu_fallback) throw Error("device " + device + " unavailable: " + why);
    spdlog::info("running on the CPU: {}", why);
    if (fallback) *fallback = why;
    return make_cpu_backend(model, options);
}

} // namespace arbor
