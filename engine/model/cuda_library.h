// libarbor_cuda.so, opened once per process on first use: its entry points, or why it
// could not be opened (this build has none, or its CUDA libraries are missing).
#pragma once

#include "cuda_entry_points.h"

#include <string>

namespace arbor {

struct CudaLibrary {
    ArborCreateCudaBackendFn create = nullptr;
    ArborListCudaDevicesFn list_devices = nullptr;
    std::string failure;  // empty when both entry points were found
};

// Opens the library on the first call (thread-safe); later calls return the same result.
const CudaLibrary& cuda_library();

// How many CUDA devices the runtime sees (touching none of them), or 0 with why there
// are none in `why`: the library's failure, or the runtime's (no driver, no device).
int cuda_device_count(std::string& why);

} // namespace arbor
