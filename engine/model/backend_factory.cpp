// Chooses the backend that BackendOptions::device names. The CUDA backend is a library
// of its own (libarbor_cuda.so, linked with the CUDA runtime and cuBLAS), opened here
// with dlopen only when asked for, so that a machine without CUDA never loads them.
#include "arbor/backend.h"
#include "arbor/error.h"
#include "arbor/model.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string>
#include <vector>

namespace arbor {
namespace {

using CreateFn = Backend* (*)(const Model*, const BackendOptions*, int);

// Where libarbor_cuda.so may be: $ARBOR_CUDA_LIBRARY, beside the executable or in its
// ../lib/arbor (an installed package), and the build tree it was built in.
std::vector<std::string> library_candidates() {
    std::vector<std::string> out;
    if (const char* env = std::getenv("ARBOR_CUDA_LIBRARY"); env && *env) out.emplace_back(env);
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        out.push_back((exe.parent_path() / "libarbor_cuda.so").string());
        out.push_back((exe.parent_path().parent_path() / "lib" / "arbor" / "libarbor_cuda.so").string());
    }
#ifdef ARBOR_CUDA_LIBRARY_PATH
    out.emplace_back(ARBOR_CUDA_LIBRARY_PATH);
#endif
#ifdef ARBOR_CUDA_INSTALLED_PATH
    out.emplace_back(ARBOR_CUDA_INSTALLED_PATH);
#endif
    return out;
}

// The library's factory, or nullptr with the reason in why.
CreateFn load_cuda_library(std::string& why) {
    static CreateFn create = nullptr;
    static std::string failure;
    static bool tried = false;
    if (!tried) {
        tried = true;
        std::string errors;
        for (const std::string& path : library_candidates()) {
            std::error_code ec;
            if (!std::filesystem::exists(path, ec)) continue;
            // RTLD_LOCAL: its CUDA symbols stay its own. The handle is never closed (the
            // backend's code must outlive every backend object).
            void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!handle) {
                errors += std::string(errors.empty() ? "" : "; ") + dlerror();
                continue;
            }
            create = reinterpret_cast<CreateFn>(dlsym(handle, "arbor_create_cuda_backend"));
            if (create) break;
            errors += "; " + path + " has no arbor_create_cuda_backend";
        }
        if (!create)
            failure = errors.empty() ? "this build has no CUDA backend (libarbor_cuda.so not found)"
                                     : "the CUDA backend library could not be loaded: " + errors;
    }
    why = failure;
    return create;
}

// "cuda" -> 0, "cuda:N" -> N; -1 when device does not name CUDA.
int cuda_ordinal(const std::string& device) {
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

std::unique_ptr<Backend> make_backend(const Model& model, const BackendOptions& options, std::string* fallback) {
    if (fallback) fallback->clear();
    const std::string& device = options.device;
    if (device.empty() || device == "cpu") return make_cpu_backend(model, options);
    const bool automatic = device == "auto";
    const int ordinal = automatic ? 0 : cuda_ordinal(device);
    if (ordinal < 0) throw Error("unknown device '" + device + "' (expected auto, cpu, cuda or cuda:N)");
    std::string why;
    try {
        // Refused before the library is loaded, so the reason is the same on every machine.
        if (options.kv_type == KvType::Q8_0) throw Error(cuda_q8_0_kv_refusal());
        if (CreateFn create = load_cuda_library(why)) return std::unique_ptr<Backend>(create(&model, &options, ordinal));
    } catch (const Error& e) {
        why = e.what();
    } catch (const std::exception& e) {
        why = std::string("CUDA backend failed: ") + e.what();
    }
    if (!automatic) throw Error("device " + device + " unavailable: " + why);
    spdlog::info("running on the CPU: {}", why);
    if (fallback) *fallback = why;
    return make_cpu_backend(model, options);
}

} // namespace arbor
