// Quantized weight matrices repacked as panels of eight rows, for products with float
// activations (the CPU backend's default for Q4_1 and Q8_0 weights).
//
// Why: in GGUF order a vector holds eight elements of one weight row, so every
// (weight row, activation row) pair needs its own accumulator and a horizontal sum, and
// each activation row is loaded once per weight row. In a panel a vector holds the same
// element of eight weight rows: one dequantized vector multiplies a broadcast activation
// element of every activation row in the tile, and each accumulator is eight finished
// outputs. With eight activation rows (eight chats decoding) this measured about 40%
// more multiply-adds per second than the GGUF-order kernels on the default model's shapes.
//
// Layout: panel p holds rows 8p .. 8p + 7 (rows past the matrix's end are zeros), one
// panel block per quantization block of the rows, the blocks in column order. A panel
// block holds the eight rows' scales and then their codes interleaved element by element
// (PanelBlockQ4_1, PanelBlockQ8_0 below); the bytes equal the GGUF blocks' in number.
//
// The operation order (the contract every path reproduces bit for bit, so a sequence's
// logits never depend on what else shares its batch, nor on the tile that computed it):
//   w[r][k] = the weight dequantized exactly as dequantize_row gives it;
//   y[t][r] = s after s = 0; s = fma(w[r][k], x[t][k], s) for k = 0, 1, ..., cols - 1.
#pragma once

#include "arbor/kernels/dtype.h"
#include "arbor/kernels/tensor_view.h"

#include <cstdint>
#include <vector>

namespace arbor {

constexpr int kPanelRows = 8;

// Codes of elements 2g (low nibble) and 2g + 1 (high nibble) of row r at qs[g][r].
struct PanelBlockQ4_1 {
    uint16_t d[kPanelRows];
    uint16_t m[kPanelRows];
    uint8_t qs[16][kPanelRows];
};
// Code of element k of row r at qs[k][r].
struct PanelBlockQ8_0 {
    uint16_t d[kPanelRows];
    int8_t qs[32][kPanelRows];
};
static_assert(sizeof(PanelBlockQ4_1) == 160 && sizeof(PanelBlockQ8_0) == 272);

class PanelWeights {
public:
    // Whether a matrix of this type and row length can be packed (Q4_1, Q8_0; whole
    // blocks, which GGUF guarantees for these types).
    static bool packable(DType type, int64_t cols);
    // Throws std::invalid_argument when !packable(w.type, w.cols).
    static PanelWeights pack(const TensorView& w);

    DType type() const { return type_; }
    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int64_t panels() const { return (rows_ + kPanelRows - 1) / kPanelRows; }
    size_t panel_bytes() const { return panel_bytes_; }
    const uint8_t* panel(int64_t p) const { return data_.data() + size_t(p) * panel_bytes_; }

    // Row r dequantized from the panels (exactly dequantize_row's values of the source row).
    void dequantize_row(int64_t r, float* out) const;

private:
    DType type_ = DType::Q4_1;
    int64_t rows_ = 0, cols_ = 0;
    size_t panel_bytes_ = 0;
    std::vector<uint8_t> data_;
};

// y[t * ldy + r] = (row r of w) . (x + t * ldx) for the rows of panels [p_begin, p_end)
// (those before w.rows()) and t < n_x, in the contract's order.
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy);

namespace ref {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy);
} // namespace ref

namespace avx2 {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy);
} // namespace avx2

} // namespace arbor
