// Threaded matrix products of quantized weights with float activations. Activations are
// quantized once per call to each weight's dot-product type, then every weight row is
// dotted with every activation row while it is hot in cache: each weight byte is read
// once per call whatever the number of activation rows.
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/tensor_view.h"
#include "arbor/kernels/thread_pool.h"

#include <cstdint>
#include <span>
#include <vector>

namespace arbor {

struct MatmulOutput {
    TensorView weight;           // rows x cols, cols equal for all outputs of one call
    float* y = nullptr;          // y[t * ldy + r]
    int64_t ldy = 0;
    const float* bias = nullptr; // optional, `rows` values
};

class MatmulScratch {
public:
    // Activation rows quantized to `type`, quantizing x on first request per call.
    struct Slot {
        DType type;
        size_t row_bytes;
        std::vector<uint8_t> data;
    };
    std::vector<Slot> slots;
};

// For each output j and activation row t < n_rows:
//   outputs[j].y[t * ldy + r] = dot(weight_j row r, x + t * cols) + bias_j[r].
void matmul(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
            MatmulScratch& scratch);

// Reference: dequantizes each weight row and accumulates in double. For tests.
void matmul_reference(const float* x, int64_t n_rows, const MatmulOutput& output);

} // namespace arbor
