// Packing into panels, the scalar reference of the panel product (panel_weights.h's
// contract) and the dispatch.
#include "arbor/kernels/panel_weights.h"

#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant_blocks.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace arbor {
namespace {

constexpr int64_t kBlock = 32;  // elements per block of both packable types

// Code of element k (0..31) of a GGUF Q4_1 block: the low nibbles are elements 0-15,
// the high nibbles 16-31.
uint8_t q4_code(const BlockQ4_1& b, int k) {
    return k < 16 ? b.qs[k] & 0x0f : b.qs[k - 16] >> 4;
}

void pack_block(const BlockQ4_1* const (&src)[kPanelRows], int rows, PanelBlockQ4_1& out) {
    std::memset(&out, 0, sizeof out);
    for (int r = 0; r < rows; ++r) {
        out.d[r] = src[r]->d;
        out.m[r] = src[r]->m;
        for (int k = 0; k < kBlock; ++k) out.qs[k / 2][r] |= uint8_t(q4_code(*src[r], k) << (4 * (k % 2)));
    }
}

void pack_block(const BlockQ8_0* const (&src)[kPanelRows], int rows, PanelBlockQ8_0& out) {
    std::memset(&out, 0, sizeof out);
    for (int r = 0; r < rows; ++r) {
        out.d[r] = src[r]->d;
        for (int k = 0; k < kBlock; ++k) out.qs[k][r] = src[r]->qs[k];
    }
}

template <class Src, class Dst>
void pack_panels(const TensorView& w, int64_t panels, int64_t blocks, uint8_t* out) {
    for (int64_t p = 0; p < panels; ++p) {
        const int rows = int(std::min<int64_t>(kPanelRows, w.rows - p * kPanelRows));
        auto* dst = reinterpret_cast<Dst*>(out) + p * blocks;
        for (int64_t b = 0; b < blocks; ++b) {
            const Src* src[kPanelRows] = {};
            for (int r = 0; r < rows; ++r) src[r] = reinterpret_cast<const Src*>(w.row(p * kPanelRows + r)) + b;
            pack_block(src, rows, dst[b]);
        }
    }
}

float element(const PanelBlockQ4_1& b, int r, int k) {
    const int code = (b.qs[k / 2][r] >> (4 * (k % 2))) & 0x0f;
    return fp16_to_fp32(b.d[r]) * float(code) + fp16_to_fp32(b.m[r]);
}

float element(const PanelBlockQ8_0& b, int r, int k) {
    return fp16_to_fp32(b.d[r]) * float(b.qs[k][r]);
}

template <class Block>
void dequantize_from(const uint8_t* panel, int r, int64_t cols, float* out) {
    const auto* blocks = reinterpret_cast<const Block*>(panel);
    for (int64_t i = 0; i < cols; ++i) out[i] = element(blocks[i / kBlock], r, int(i % kBlock));
}

} // namespace

bool PanelWeights::packable(DType type, int64_t cols) {
    return (type == DType::Q4_1 || type == DType::Q8_0) && cols > 0 && cols % kBlock == 0;
}

PanelWeights PanelWeights::pack(const TensorView& w) {
    if (!packable(w.type, w.cols)) throw std::invalid_argument("PanelWeights: type or row length cannot be packed");
    PanelWeights out;
    out.type_ = w.type;
    out.rows_ = w.rows;
    out.cols_ = w.cols;
    const int64_t blocks = w.cols / kBlock;
    const size_t block_bytes = w.type == DType::Q4_1 ? sizeof(PanelBlockQ4_1) : sizeof(PanelBlockQ8_0);
    out.panel_bytes_ = size_t(blocks) * block_bytes;
    out.data_.resize(out.panel_bytes_ * size_t(out.panels()));
    if (w.type == DType::Q4_1) pack_panels<BlockQ4_1, PanelBlockQ4_1>(w, out.panels(), blocks, out.data_.data());
    else pack_panels<BlockQ8_0, PanelBlockQ8_0>(w, out.panels(), blocks, out.data_.data());
    return out;
}

void PanelWeights::dequantize_row(int64_t r, float* out) const {
    const uint8_t* p = panel(r / kPanelRows);
    const int lane = int(r % kPanelRows);
    if (type_ == DType::Q4_1) dequantize_from<PanelBlockQ4_1>(p, lane, cols_, out);
    else dequantize_from<PanelBlockQ8_0>(p, lane, cols_, out);
}

namespace ref {
void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy) {
    std::vector<float> row(size_t(w.cols()));
    for (int64_t r = p_begin * kPanelRows; r < std::min(p_end * kPanelRows, w.rows()); ++r) {
        w.dequantize_row(r, row.data());
        for (int64_t t = 0; t < n_x; ++t) {
            float s = 0.0f;
            for (int64_t k = 0; k < w.cols(); ++k) s = std::fma(row[size_t(k)], x[t * ldx + k], s);
            y[t * ldy + r] = s;
        }
    }
}
} // namespace ref

void panel_dot(const PanelWeights& w, int64_t p_begin, int64_t p_end, const float* x, int64_t ldx, int64_t n_x,
               float* y, int64_t ldy) {
    if (avx2::available()) avx2::panel_dot(w, p_begin, p_end, x, ldx, n_x, y, ldy);
    else ref::panel_dot(w, p_begin, p_end, x, ldx, n_x, y, ldy);
}

} // namespace arbor
