// Owners of device and pinned host memory for the CUDA backend; every failure becomes an
// arbor::Error naming what was being done (out of memory included), never a crash.
#pragma once

#include "arbor/error.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace arbor {

inline void check_cuda(cudaError_t err, const char* what) {
    if (err != cudaSuccess) {
        cudaGetLastError();  // clears a sticky launch error so that the next step reports its own
        throw Error(std::string("CUDA error while ") + what + ": " + cudaGetErrorString(err));
    }
}

struct DeviceMemory {
    static cudaError_t allocate(void** p, size_t bytes) { return cudaMalloc(p, bytes); }
    static void release(void* p) { cudaFree(p); }
    static constexpr const char* kind = "GPU memory";
};

// Pinned host memory: asynchronous copies read it directly.
struct PinnedMemory {
    static cudaError_t allocate(void** p, size_t bytes) { return cudaMallocHost(p, bytes); }
    static void release(void* p) { cudaFreeHost(p); }
    static constexpr const char* kind = "pinned host memory";
};

// A buffer of Memory, reallocated (contents dropped) when it must grow.
template <class Memory>
class Buffer {
public:
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { Memory::release(data_); }

    void resize(size_t bytes) {
        if (bytes <= bytes_) return;
        Memory::release(data_);
        data_ = nullptr;
        bytes_ = 0;
        check_cuda(Memory::allocate(&data_, bytes),
                   ("allocating " + std::to_string(bytes >> 20) + " MiB of " + Memory::kind).c_str());
        bytes_ = bytes;
    }
    void* get() const { return data_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

using DeviceBuffer = Buffer<DeviceMemory>;
using PinnedBuffer = Buffer<PinnedMemory>;

// One allocation cut into 256-byte aligned pieces (the weights: one cudaMalloc instead
// of hundreds, and every matrix aligned for vector loads).
class DeviceArena {
public:
    void reserve(size_t bytes) { buffer_.resize(bytes), capacity_ = bytes; }
    void* take(size_t bytes) {
        const size_t at = (used_ + 255) / 256 * 256;
        if (at + bytes > capacity_) throw Error("GPU weight arena overflow (a sizing error)");
        used_ = at + bytes;
        return static_cast<char*>(buffer_.get()) + at;
    }
    size_t used() const { return used_; }

private:
    DeviceBuffer buffer_;
    size_t capacity_ = 0, used_ = 0;
};

} // namespace arbor
