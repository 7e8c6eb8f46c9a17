// Threaded matrix products of quantized weights with float activations: each weight byte
// is read once per call whatever the number of activation rows.
//
// Two ways to take the activations:
// - Float (default): float_dot.h, weights dequantized exactly and multiplied with the
//   float activations in one fixed order, exact up to float rounding; through the
//   weight's panels (panel_weights.h) when the output has them, with the activations
//   rounded to 16 bits per block. Either way a row's result does not depend on its batch.
// - Int8: activations are quantized per block of 32 to 8 bits, as llama.cpp does: through
//   the weight's panels with 8-bit codes (the panel contract with a coarser step; VNNI's
//   byte products where the CPU has AVX-512), else in GGUF order as Q8_0/Q8_1/Q8_K blocks
//   dotted with the quantized blocks. Faster for long prompts and batches, but the
//   rounding of activations makes logits jump by tenths under tiny input changes on some
//   models, so it is not the default.
#pragma once

#include "arbor/kernels/aligned_floats.h"
#include "arbor/kernels/dtype.h"
#include "arbor/kernels/panel_weights.h"
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
    // Optional: `weight` packed as panels, used in either mode (a weight must always be
    // given the same way, or its rows' results would depend on the call).
    const PanelWeights* panels = nullptr;
};

enum class Activations { Float, Int8 };

class MatmulScratch {
public:
    // Per-thread buffers of dequantized weight rows (Float mode).
    std::vector<AlignedFloats> weight_rows;
    // Activation rows quantized to `type`, quantizing x on first request per call.
    struct Slot {
        DType type;
        size_t row_bytes;
        std::vector<uint8_t> data;
    };
    std::vector<Slot> slots;
    // The activations quantized for the panel products (weights with panels).
    PanelActivations panel_activations;
};

// Who quantizes the activation rows for the panel products: matmul, in a pass over the
// rows of its own, or the caller, who quantized every row of x into
// scratch.panel_activations (quantize_row) right after computing it, which saves the
// pool that pass.
enum class PanelRows { Quantize, Ready };

// Whether a matmul of these outputs in this mode reads quantized panel rows, and the
// code limit of those rows (PanelActivations::resize) in this mode.
bool uses_panel_rows(std::span<const MatmulOutput> outputs, Activations mode);
int32_t panel_code_limit(Activations mode);

// For each output j and activation row t < n_rows:
//   outputs[j].y[t * ldy + r] = dot(weight_j row r, x + t * cols) + bias_j[r].
// PanelRows::Ready throws std::invalid_argument unless scratch.panel_activations holds
// n_rows rows of cols elements.
void matmul(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
            MatmulScratch& scratch, Activations mode = Activations::Float,
            PanelRows panel_rows = PanelRows::Quantize);

// For each output j: outputs[j].y[r] = dot(weight_j row r, x + j * cols) + bias_j[r], the
// bits matmul gives that row alone (MoE experts, each with the row of its own input), in
// one pass of the pool over every output's rows (in Int8 mode where every output has
// panels; otherwise one matmul per output).
void matmul_each(ThreadPool& pool, const float* x, std::span<const MatmulOutput> outputs, MatmulScratch& scratch,
                 Activations mode = Activations::Float);

// Reference: dequantizes each weight row and accumulates in double. For tests.
void matmul_reference(const float* x, int64_t n_rows, const MatmulOutput& output);

} // namespace arbor
