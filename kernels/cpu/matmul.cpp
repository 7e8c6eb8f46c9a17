#include "arbor/kernels/matmul.h"

#include "arbor/kernels/float_dot.h"
#include "arbor/kernels/quant.h"

#include <algorithm>
#include <stdexcept>

namespace arbor {
namespace {

// Activation rows per pass over a task's weight rows: they stay in L2 while the weight
// rows stream past, for prompts of any length.
constexpr int64_t kActivationRows = 64;

struct Range {
    size_t output;
    int64_t begin, end;
};

// Weight rows of one task are a multiple of this: a panel tile's two panels, or 24 float
// rows (the float kernels' three-row tiles never leave a remainder inside a matrix).
int64_t row_granule(const MatmulOutput& o) {
    return o.panels ? 2 * kPanelRows : 24;
}

// Tasks from large to small, claimed in order: each takes about a quarter of one
// thread's share of the rows not yet given out (at most 240 rows, at least one granule),
// so the threads finish within about one small task of each other instead of one large
// one (measured: with eight chats the pool's callers waited for the last task in
// every product of every layer).
std::vector<Range> split_rows(std::span<const MatmulOutput> outputs, int threads) {
    int64_t left = 0;
    for (const auto& o : outputs) left += o.weight.rows;
    std::vector<Range> tasks;
    for (size_t j = 0; j < outputs.size(); ++j) {
        const int64_t granule = row_granule(outputs[j]);
        for (int64_t r = 0; r < outputs[j].weight.rows;) {
            const int64_t want = std::clamp<int64_t>(left / (4 * int64_t(threads)), granule, 240);
            const int64_t end = std::min(r + want / granule * granule, outputs[j].weight.rows);
            tasks.push_back({j, r, end});
            left -= end - r;
            r = end;
        }
    }
    return tasks;
}

// fn(t) for every activation row, on the pool from four rows on.
template <class F>
void for_each_row(ThreadPool& pool, int64_t n_rows, F&& fn) {
    if (n_rows >= 4) pool.parallel_for(n_rows, [&](int64_t t, int) { fn(t); });
    else for (int64_t t = 0; t < n_rows; ++t) fn(t);
}

void add_bias(const MatmulOutput& out, const Range& range, int64_t n_rows) {
    if (!out.bias) return;
    for (int64_t t = 0; t < n_rows; ++t)
        for (int64_t r = range.begin; r < range.end; ++r) out.y[t * out.ldy + r] += out.bias[r];
}

// float_dot_tile computes each (weight row, activation row) pair in one fixed operation
// order whatever the tiling, so a row's output never depends on its batch. `each`:
// output j takes activation row j alone (matmul_each), into its first row.
// In Int8 mode every output has panels (matmul sends the others to matmul_int8) and the
// panel rows take 8-bit codes.
void matmul_float(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
                  MatmulScratch& scratch, int64_t cols, PanelRows panel_rows, Activations mode, bool each = false) {
    const std::vector<Range> tasks = split_rows(outputs, pool.size());
    scratch.weight_rows.resize(size_t(pool.size()));
    if (panel_rows == PanelRows::Quantize && uses_panel_rows(outputs, mode)) {
        scratch.panel_activations.resize(n_rows, cols, panel_code_limit(mode));
        for_each_row(pool, n_rows, [&](int64_t t) { scratch.panel_activations.quantize_row(t, x + t * cols); });
    }
    pool.parallel_for(int64_t(tasks.size()), [&](int64_t task, int thread) {
        const Range& range = tasks[size_t(task)];
        const MatmulOutput& out = outputs[range.output];
        if (each) {
            const auto t = int64_t(range.output);
            if (out.panels)
                panel_dot(*out.panels, range.begin / kPanelRows, (range.end + kPanelRows - 1) / kPanelRows,
                          scratch.panel_activations, t, 1, out.y, out.ldy);
            else
                float_dot_tile(out.weight.type, cols, out.weight.row(range.begin), out.weight.row_stride,
                               range.end - range.begin, x + t * cols, cols, 1, out.y + range.begin, out.ldy,
                               scratch.weight_rows[size_t(thread)]);
            add_bias(out, range, 1);
            return;
        }
        for (int64_t t0 = 0; t0 < n_rows; t0 += kActivationRows) {
            const int64_t rows = std::min(kActivationRows, n_rows - t0);
            if (out.panels) {
                // Tasks start on a multiple of 16 rows, so on a panel's first row.
                panel_dot(*out.panels, range.begin / kPanelRows, (range.end + kPanelRows - 1) / kPanelRows,
                          scratch.panel_activations, t0, rows, out.y + t0 * out.ldy, out.ldy);
                continue;
            }
            float_dot_tile(out.weight.type, cols, out.weight.row(range.begin), out.weight.row_stride,
                           range.end - range.begin, x + t0 * cols, cols, rows,
                           out.y + t0 * out.ldy + range.begin, out.ldy, scratch.weight_rows[size_t(thread)]);
        }
        add_bias(out, range, n_rows);
    });
}

// Int8 mode in GGUF order: the activations quantized once for every distinct
// dot-product type (Q8_0/Q8_1/Q8_K) and dotted with the quantized blocks.
void matmul_int8(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
                 MatmulScratch& scratch, int64_t cols) {
    if (outputs.empty()) return;
    scratch.slots.resize(0);
    std::vector<size_t> slot_of(outputs.size());
    for (size_t j = 0; j < outputs.size(); ++j) {
        const DType act = vec_dot_type(outputs[j].weight.type);
        size_t s = 0;
        while (s < scratch.slots.size() && scratch.slots[s].type != act) ++s;
        if (s == scratch.slots.size()) scratch.slots.push_back({act, row_bytes(act, cols), {}});
        slot_of[j] = s;
    }
    for (auto& slot : scratch.slots) {
        slot.data.resize(slot.row_bytes * size_t(n_rows));
        for_each_row(pool, n_rows, [&](int64_t t) {
            quantize_row(slot.type, x + t * cols, slot.data.data() + size_t(t) * slot.row_bytes, cols);
        });
    }

    const std::vector<Range> tasks = split_rows(outputs, pool.size());

    std::vector<VecDotFn> dots(outputs.size());
    std::vector<VecDotMultiFn> multis(outputs.size());
    for (size_t j = 0; j < outputs.size(); ++j) {
        dots[j] = vec_dot_fn(outputs[j].weight.type);
        multis[j] = vec_dot_multi_fn(outputs[j].weight.type);
    }

    pool.parallel_for(int64_t(tasks.size()), [&](int64_t task, int) {
        const Range& range = tasks[size_t(task)];
        const MatmulOutput& out = outputs[range.output];
        const auto& slot = scratch.slots[slot_of[range.output]];
        if (n_rows == 1) {
            const VecDotFn dot = dots[range.output];
            for (int64_t r = range.begin; r < range.end; ++r) out.y[r] = dot(cols, out.weight.row(r), slot.data.data());
        } else {
            const VecDotMultiFn multi = multis[range.output];
            for (int64_t t0 = 0; t0 < n_rows; t0 += kActivationRows) {
                const int n_act = int(std::min<int64_t>(kActivationRows, n_rows - t0));
                const uint8_t* act = slot.data.data() + size_t(t0) * slot.row_bytes;
                for (int64_t r = range.begin; r < range.end; ++r)
                    multi(cols, out.weight.row(r), act, slot.row_bytes, n_act, out.y + t0 * out.ldy + r, out.ldy);
            }
        }
        add_bias(out, range, n_rows);
    });
}

// The outputs' common number of columns; throws std::invalid_argument where they differ
// or a panel copy does not match its weight.
int64_t checked_cols(std::span<const MatmulOutput> outputs) {
    const int64_t cols = outputs[0].weight.cols;
    for (const auto& o : outputs) {
        if (o.weight.cols != cols) throw std::invalid_argument("matmul: outputs differ in cols");
        if (o.panels && (o.panels->rows() != o.weight.rows || o.panels->cols() != cols))
            throw std::invalid_argument("matmul: panels do not match their weight");
    }
    return cols;
}

} // namespace

bool uses_panel_rows(std::span<const MatmulOutput> outputs, Activations) {
    return std::any_of(outputs.begin(), outputs.end(), [](const MatmulOutput& o) { return o.panels; });
}

int32_t panel_code_limit(Activations mode) {
    return mode == Activations::Int8 ? kPanelCodeLimit8 : kPanelCodeLimit16;
}

void matmul(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
            MatmulScratch& scratch, Activations mode, PanelRows panel_rows) {
    if (outputs.empty() || n_rows <= 0) return;
    const int64_t cols = checked_cols(outputs);
    if (panel_rows == PanelRows::Ready && uses_panel_rows(outputs, mode) &&
        (scratch.panel_activations.rows() != n_rows || scratch.panel_activations.cols() != cols ||
         scratch.panel_activations.limit() != panel_code_limit(mode)))
        throw std::invalid_argument("matmul: the quantized panel rows do not match the activations");
    const auto has_panels = [](const MatmulOutput& o) { return o.panels != nullptr; };
    if (mode == Activations::Float || std::all_of(outputs.begin(), outputs.end(), has_panels)) {
        matmul_float(pool, x, n_rows, outputs, scratch, cols, panel_rows, mode);
        return;
    }
    // Int8 with some outputs in GGUF order: those through the Q8 products, the rest
    // through their panels.
    std::vector<MatmulOutput> panelled, gguf;
    for (const auto& o : outputs) (o.panels ? panelled : gguf).push_back(o);
    if (!panelled.empty()) matmul_float(pool, x, n_rows, panelled, scratch, cols, panel_rows, mode);
    matmul_int8(pool, x, n_rows, gguf, scratch, cols);
}

void matmul_each(ThreadPool& pool, const float* x, std::span<const MatmulOutput> outputs, MatmulScratch& scratch,
                 Activations mode) {
    if (outputs.empty()) return;
    const int64_t cols = checked_cols(outputs);
    const bool panelled =
        std::all_of(outputs.begin(), outputs.end(), [](const MatmulOutput& o) { return o.panels != nullptr; });
    if (mode != Activations::Float && !panelled) {
        for (size_t j = 0; j < outputs.size(); ++j)
            matmul(pool, x + int64_t(j) * cols, 1, outputs.subspan(j, 1), scratch, mode);
        return;
    }
    matmul_float(pool, x, int64_t(outputs.size()), outputs, scratch, cols, PanelRows::Quantize, mode, true);
}

void matmul_reference(const float* x, int64_t n_rows, const MatmulOutput& output) {
    const auto& w = output.weight;
    std::vector<float> row(size_t(w.cols));
    for (int64_t r = 0; r < w.rows; ++r) {
        dequantize_row(w.type, w.row(r), row.data(), w.cols, Isa::Scalar);
        for (int64_t t = 0; t < n_rows; ++t) {
            double sum = output.bias ? output.bias[r] : 0.0;
            for (int64_t c = 0; c < w.cols; ++c) sum += double(row[size_t(c)]) * double(x[t * w.cols + c]);
            output.y[t * output.ldy + r] = float(sum);
        }
    }
}

} // namespace arbor
