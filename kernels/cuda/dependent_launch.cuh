// Kernel launches that let the stream's next kernel start before this one ends
// (programmatic dependent launch, compute capability 9.0 and later). A decode step is
// hundreds of short kernels; without this each one waits for the last block of the one
// before to finish before its own blocks are even placed, and the GPU idles in between.
//
// Invariant: every kernel launched early by launch_kernel() calls wait_for_previous_kernel()
// before it reads anything an earlier kernel writes or writes anything an earlier kernel
// reads.
// Before that call it may only read what no kernel of the step writes (the step's
// positions and block tables, copied in before its first kernel). Then a kernel
// that starts early never sees a half-written input, and as each kernel waits for the
// one before to finish, the wait covers every earlier kernel too.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace arbor::cuda {

// Whether launches on `stream` overlap: set_overlapping_launches turned it on for the
// stream on this thread, on a device that supports it.
bool overlapping(cudaStream_t stream);

// early<<<grid, block, shared, stream>>>(args...) marked as allowed to overlap the kernel
// before it where overlapping(stream), else plain<<<...>>>(args...). `plain` may be
// `early` itself where the kernel's waits cost nothing when it is launched plainly.
template <class... Params, class... Args>
void launch_kernel(void (*early)(Params...), void (*plain)(Params...), dim3 grid, dim3 block, size_t shared,
                   cudaStream_t stream, Args&&... args) {
    if (!overlapping(stream)) {
        plain<<<grid, block, shared, stream>>>(std::forward<Args>(args)...);
        return;
    }
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    // An error stays the stream's last error, read after the step's launches.
    (void)cudaLaunchKernelEx(&config, early, std::forward<Args>(args)...);
}

template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                   Args&&... args) {
    launch_kernel(kernel, kernel, grid, block, shared, stream, std::forward<Args>(args)...);
}

// Blocks until the kernel before this one in the stream has finished and its writes are
// visible (a no-op when it was not launched early, and before compute capability 9.0).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// let_next_kernel_start() then wait_for_previous_kernel() in a kernel compiled in two
// forms, EARLY for launches that overlap (launch_kernel's `early`), and a plain one that
// keeps the code of a kernel that never starts early.
template <bool EARLY>
__device__ __forceinline__ void start_after_previous_kernel();

// Lets the stream's next kernel be placed on free multiprocessors now; it still waits in
// wait_for_previous_kernel() for this one to finish.
__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

template <bool EARLY>
__device__ __forceinline__ void start_after_previous_kernel() {
    if constexpr (EARLY) {
        let_next_kernel_start();
        wait_for_previous_kernel();
    }
}

} // namespace arbor::cuda
