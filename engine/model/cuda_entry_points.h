// The C entry points of libarbor_cuda.so, which backend_factory.cpp and cuda_devices.cpp
// look up with dlsym (cuda_library.cpp). Plain C types only: the library is built with
// the CUDA toolchain and opened at run time, so nothing but these crosses between them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arbor {
class Backend;
class Model;
struct BackendOptions;
} // namespace arbor

extern "C" {

// One CUDA device as the runtime numbers it (CUDA_VISIBLE_DEVICES applies).
struct ArborCudaDeviceInfo {
    char name[256];            // NUL-terminated, e.g. "NVIDIA H100 80GB HBM3"
    uint64_t total_bytes;
    uint64_t free_bytes;       // valid only when free_known is 1
    int32_t free_known;
};

// Makes a CUDA backend on device `ordinal`; throws arbor::Error (both sides are C++ built
// with the same standard library, so the exception crosses).
using ArborCreateCudaBackendFn = arbor::Backend* (*)(const arbor::Model*, const arbor::BackendOptions*, int ordinal);

// Writes up to `capacity` devices to `out` and returns how many there are (possibly more
// than capacity); returns 0 with why the runtime sees none (no driver, a driver too old,
// no device) written NUL-terminated to `why` (of `why_size` bytes). Never throws.
using ArborListCudaDevicesFn = int (*)(ArborCudaDeviceInfo* out, int capacity, char* why, size_t why_size);

} // extern "C"
