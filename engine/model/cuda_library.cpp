// Finds and opens libarbor_cuda.so with dlopen, so that programs built with CUDA start
// on machines without the CUDA runtime: only this library links it.
#include "cuda_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

namespace arbor {
namespace {

// Where libarbor_cuda.so may be: $ARBOR_CUDA_LIBRARY, beside the executable or in its
// ../lib/arbor (the .deb installs it there), and the build tree it was built in.
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
    return out;
}

bool library_found() {
    std::error_code ec;
    return std::ranges::any_of(library_candidates(),
                               [&](const std::string& path) { return std::filesystem::exists(path, ec); });
}

// Whether the NVIDIA driver's library opens (it stays open: the CUDA runtime opens it again).
bool driver_present() {
    static const bool present = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) != nullptr;
    return present;
}

CudaLibrary open_library() {
    CudaLibrary lib;
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
        lib.create = reinterpret_cast<ArborCreateCudaBackendFn>(dlsym(handle, "arbor_create_cuda_backend"));
        lib.list_devices = reinterpret_cast<ArborListCudaDevicesFn>(dlsym(handle, "arbor_list_cuda_devices"));
        if (lib.create && lib.list_devices) return lib;
        lib = {};
        errors += std::string(errors.empty() ? "" : "; ") + path + " lacks the entry points of this version";
    }
    lib.failure = errors.empty() ? "this build has no CUDA backend (libarbor_cuda.so not found)"
                                 : "the CUDA backend library could not be loaded: " + errors;
    return lib;
}

} // namespace

const CudaLibrary& cuda_library() {
    static const CudaLibrary lib = open_library();
    return lib;
}

int cuda_device_count(std::string& why) {
    // Without the driver no device can run: said without opening the backend's library,
    // whose CUDA runtime and cuBLAS would otherwise stay mapped for nothing (a CPU run of a
    // 1B model held about 60 MB of cuBLAS pages). The same words as the runtime's answer.
    if (library_found() && !driver_present()) {
        why = "no NVIDIA driver is installed (libcuda.so.1 not found)";
        return 0;
    }
    const CudaLibrary& lib = cuda_library();
    if (!lib.list_devices) {
        why = lib.failure;
        return 0;
    }
    char reason[512] = {};
    const int count = lib.list_devices(nullptr, 0, reason, sizeof reason);
    if (count <= 0) why = reason[0] ? reason : "no CUDA device found";
    return std::max(count, 0);
}

} // namespace arbor
