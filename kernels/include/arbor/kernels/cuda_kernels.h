// CUDA kernels (built only when nvcc is available). Host-callable launchers working on
// device pointers, asynchronous on the given stream. The CUDA backend builds on these.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>
#include <string>

namespace arbor::cuda {

// Number of usable CUDA devices; 0 when there is no driver or device. why_not gets a
// human-readable reason in that case.
int device_count(std::string* why_not = nullptr);

// y[r] = dot(weight row r, x) for a rows x cols matrix of type F32, F16, Q8_0 or Q4_1.
// Returns false for a type without a CUDA kernel yet.
bool matvec(DType type, const void* weight, int64_t rows, int64_t cols, const float* x, float* y, void* stream);

// y = x / rms(x) * w over n elements, one vector.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps, void* stream);

} // namespace arbor::cuda
