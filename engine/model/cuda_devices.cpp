#include "arbor/cuda_devices.h"

#include "cuda_library.h"

#include <algorithm>
#include <cstring>

namespace arbor {

CudaDevices find_cuda_devices() {
    CudaDevices out;
    const int count = cuda_device_count(out.none_reason);
    if (count == 0) return out;
    std::vector<ArborCudaDeviceInfo> infos(static_cast<size_t>(count));
    char why[512] = {};
    // A device that appeared in between is left for the next search.
    const int listed = std::min(count, cuda_library().list_devices(infos.data(), count, why, sizeof why));
    for (int i = 0; i < listed; ++i) {
        const ArborCudaDeviceInfo& info = infos[size_t(i)];
        CudaDevice d;
        d.ordinal = i;
        d.name = std::string(info.name, strnlen(info.name, sizeof info.name));
        d.total_bytes = info.total_bytes;
        if (info.free_known) d.free_bytes = info.free_bytes;
        out.devices.push_back(std::move(d));
    }
    if (out.devices.empty()) out.none_reason = why[0] ? why : "no CUDA device found";
    return out;
}

} // namespace arbor
