// arbor_list_cuda_devices, libarbor_cuda.so's answer to "which GPUs are there": names and
// memory from the CUDA runtime, free memory from NVML (the driver's management library)
// where it has it, so that listing creates no CUDA context (each costs hundreds of MiB
// of device memory for as long as the process runs); otherwise from cudaMemGetInfo.
#include "model/cuda_entry_points.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void write_reason(char* why, size_t size, const std::string& text) {
    if (size == 0) return;
    std::snprintf(why, size, "%s", text.c_str());
}

std::string version_text(int version) {  // 12040 -> "12.4"
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// Why the runtime sees no device: no driver at all, one too old for this runtime, or none visible.
std::string no_device_reason(cudaError_t count_error) {
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (driver == 0) return "no NVIDIA driver is installed (libcuda.so.1 not found)";
    if (count_error == cudaErrorInsufficientDriver)
        return "the NVIDIA driver supports CUDA " + version_text(driver) + ", older than the CUDA " +
               version_text(runtime) + " runtime this build uses";
    if (count_error == cudaSuccess || count_error == cudaErrorNoDevice) {
        const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
        return visible ? "no CUDA device is visible (CUDA_VISIBLE_DEVICES=" + std::string(visible) + ")"
                       : "no CUDA device found";
    }
    return std::string("CUDA could not start: ") + cudaGetErrorString(count_error);
}

// The few NVML calls needed, declared here (the toolkit need not ship nvml.h); their
// ABI is stable across drivers.
struct NvmlMemory {
    unsigned long long total, free, used;
};
struct Nvml {
    using Init = int (*)();
    using ByBusId = int (*)(const char*, void**);
    using MemoryInfo = int (*)(void*, NvmlMemory*);
    void* handle = nullptr;
    Init shutdown = nullptr;
    ByBusId by_bus_id = nullptr;
    MemoryInfo memory_info = nullptr;

    Nvml() {
        handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!handle) return;
        auto init = reinterpret_cast<Init>(dlsym(handle, "nvmlInit_v2"));
        shutdown = reinterpret_cast<Init>(dlsym(handle, "nvmlShutdown"));
        by_bus_id = reinterpret_cast<ByBusId>(dlsym(handle, "nvmlDeviceGetHandleByPciBusId_v2"));
        memory_info = reinterpret_cast<MemoryInfo>(dlsym(handle, "nvmlDeviceGetMemoryInfo"));
        if (!init || !shutdown || !by_bus_id || !memory_info || init() != 0) {
            dlclose(handle);
            handle = nullptr;
        }
    }
    ~Nvml() {
        if (!handle) return;
        shutdown();
        dlclose(handle);
    }
    // The device's memory by its PCI bus id; false when NVML cannot say.
    bool memory(const char* bus_id, NvmlMemory& out) const {
        void* device = nullptr;
        return handle && by_bus_id(bus_id, &device) == 0 && memory_info(device, &out) == 0;
    }
};

} // namespace

extern "C" __attribute__((visibility("default"))) int arbor_list_cuda_devices(ArborCudaDeviceInfo* out, int capacity,
                                                                               char* why, size_t why_size) {
    write_reason(why, why_size, "");
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count <= 0) {
        write_reason(why, why_size, no_device_reason(err));
        cudaGetLastError();  // clears the sticky error for whoever asks next
        return 0;
    }
    if (capacity <= 0) return count;  // only counted: no device is touched
    const Nvml nvml;
    for (int i = 0; i < count && i < capacity; ++i) {
        ArborCudaDeviceInfo& info = out[i];
        std::memset(&info, 0, sizeof info);
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            std::snprintf(info.name, sizeof info.name, "CUDA device %d (unreadable)", i);
            continue;
        }
        std::snprintf(info.name, sizeof info.name, "%s", prop.name);
        info.total_bytes = prop.totalGlobalMem;
        char bus_id[32] = {};
        NvmlMemory mem{};
        // NVML sees whole GPUs: a MIG instance (far less memory than its GPU) is asked
        // through CUDA instead.
        if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, i) == cudaSuccess && nvml.memory(bus_id, mem) &&
            mem.total <= uint64_t(prop.totalGlobalMem) / 4 * 5) {
            info.free_bytes = mem.free;
            info.free_known = 1;
            continue;
        }
        size_t free_bytes = 0, total_bytes = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
            info.free_bytes = free_bytes;
            info.free_known = 1;
        }
        cudaGetLastError();
    }
    return count;
}
