// Whether launches may overlap (dependent_launch.cuh): checked once per device.
#include "dependent_launch.cuh"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace arbor::cuda {

bool dependent_launch_enabled() {
    static const bool allowed = [] {
        const char* v = std::getenv("ARBOR_CUDA_PDL");
        return !(v && std::strcmp(v, "0") == 0);
    }();
    if (!allowed) return false;
    // Per device: 0 not yet asked, 1 no, 2 yes.
    static std::array<std::atomic<int>, 64> known{};
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= int(known.size())) return false;
    int state = known[size_t(device)].load(std::memory_order_relaxed);
    if (state == 0) {
        int major = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) major = 0;
        state = major >= 9 ? 2 : 1;
        known[size_t(device)].store(state, std::memory_order_relaxed);
    }
    return state == 2;
}

} // namespace arbor::cuda
