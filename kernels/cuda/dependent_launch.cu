// Which launches overlap (dependent_launch.cuh): a stream per thread, turned on by the
// backend; the device's support checked once per device.
#include "arbor/kernels/cuda_kernels.h"
#include "dependent_launch.cuh"

#include <array>
#include <atomic>

namespace arbor::cuda {
namespace {

thread_local cudaStream_t t_overlapping = nullptr;

} // namespace

bool overlapping_launches_supported() {
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

void set_overlapping_launches(void* stream, bool on) {
    auto* s = static_cast<cudaStream_t>(stream);
    if (on && s && overlapping_launches_supported()) t_overlapping = s;
    else if (t_overlapping == s) t_overlapping = nullptr;
}

bool overlapping(cudaStream_t stream) { return stream && stream == t_overlapping; }

} // namespace arbor::cuda
