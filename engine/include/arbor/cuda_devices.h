// The NVIDIA GPUs the CUDA backend could run on, for a person choosing one (the app's
// Device setting): asked through libarbor_cuda.so, so it works, and says why there are
// none, on a machine without a driver, without a GPU, or with a build without CUDA.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arbor {

struct CudaDevice {
    int ordinal = 0;  // N of the device name "cuda:N"
    std::string name;
    uint64_t total_bytes = 0;
    std::optional<uint64_t> free_bytes;  // unknown when the driver would not say
};

struct CudaDevices {
    std::vector<CudaDevice> devices;
    std::string none_reason;  // why devices is empty (empty when it is not)
};

// Asks the CUDA runtime (through the library, opened on first use); never throws.
CudaDevices find_cuda_devices();

} // namespace arbor
