// A non-owning view of a 2-D weight matrix stored row by row in any element type.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstddef>
#include <cstdint>

namespace arbor {

struct TensorView {
    DType type = DType::F32;
    int64_t cols = 0;          // elements per row (the contiguous dimension)
    int64_t rows = 0;
    const uint8_t* data = nullptr;
    size_t row_stride = 0;     // bytes from one row to the next

    bool empty() const { return data == nullptr; }
    const uint8_t* row(int64_t r) const { return data + size_t(r) * row_stride; }
};

} // namespace arbor
