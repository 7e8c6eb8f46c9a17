#include "arbor/kernels/matmul.h"

#include "arbor/kernels/float_dot.h"
#include "arbor/kernels/gemm_f32.h"
#include "arbor/kernels/quant.h"

#include <algorithm>
#include <stdexcept>

namespace arbor {
namespace {

// Rows handled by one task: small enough to balance two to a few dozen threads,
// large enough that the per-task overhead (one atomic) stays negligible.
int64_t rows_per_task(int64_t total_rows, int threads) {
    const int64_t target_tasks = int64_t(threads) * 8;
    int64_t chunk = (total_rows + target_tasks - 1) / target_tasks;
    return std::clamp<int64_t>((chunk + 7) / 8 * 8, 8, 256);
}

constexpr int64_t kActivationTile = 64;

struct Range {
    size_t output;
    int64_t begin, end;
};

std::vector<Range> split_rows(std::span<const MatmulOutput> outputs, int threads) {
    int64_t total_rows = 0;
    for (const auto& o : outputs) total_rows += o.weight.rows;
    const int64_t chunk = rows_per_task(total_rows, threads);
    std::vector<Range> tasks;
    for (size_t j = 0; j < outputs.size(); ++j)
        for (int64_t r = 0; r < outputs[j].weight.rows; r += chunk)
            tasks.push_back({j, r, std::min(r + chunk, outputs[j].weight.rows)});
    return tasks;
}

void add_bias(const MatmulOutput& out, const Range& range, int64_t n_rows) {
    if (!out.bias) return;
    for (int64_t t = 0; t < n_rows; ++t)
        for (int64_t r = range.begin; r < range.end; ++r) out.y[t * out.ldy + r] += out.bias[r];
}

// Q4_0, Q4_1 and Q8_0 rows go through the block kernels (float_dot.h), which unpack each
// block in registers once for up to four activation rows; their results do not depend
// on how many rows share the call, so a row's output never depends on its batch. Other
// types are dequantized per group of rows into the thread's buffer and multiplied with
// gemm_tile_f32 (whose per-pair results are likewise independent of the tiling). With
// few activation rows a group of 4 stays in L1; with many, a group of up to kGroupRows
// rows stays in L2 while activation rows stream past it.
constexpr int64_t kGroupRows = 32;
// Activation rows per pass over a weight row: keeps them in L1 for long prompts.
constexpr int kActivationRows = 64;

void matmul_float(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
                  MatmulScratch& scratch, int64_t cols) {
    const std::vector<Range> tasks = split_rows(outputs, pool.size());
    const int64_t group = n_rows <= 3 ? 4 : kGroupRows;
    const int64_t blocks = cols / 32;
    bool any_block_type = false, any_other = false;
    for (const auto& o : outputs) (has_block_kernels(o.weight.type) ? any_block_type : any_other) = true;
    if (any_block_type) {
        scratch.block_sums.resize(size_t(n_rows * blocks));
        for (int64_t t = 0; t < n_rows; ++t) block_sums_32(x + t * cols, cols, &scratch.block_sums[size_t(t * blocks)]);
    }
    if (any_other) {
        scratch.weight_rows.resize(size_t(pool.size()));
        for (auto& b : scratch.weight_rows) b.resize(size_t(group * cols));
    }
    const float* sums = scratch.block_sums.data();

    pool.parallel_for(int64_t(tasks.size()), [&](int64_t task, int thread) {
        const Range& range = tasks[size_t(task)];
        const MatmulOutput& out = outputs[range.output];
        const DType type = out.weight.type;
        if (has_block_kernels(type)) {
            for (int64_t t0 = 0; t0 < n_rows; t0 += kActivationRows) {
                const int n_x = int(std::min<int64_t>(kActivationRows, n_rows - t0));
                dot_multi_rows(type, cols, out.weight.row(range.begin), out.weight.row_stride, range.end - range.begin,
                               x + t0 * cols, cols, sums + t0 * blocks, n_x, out.y + t0 * out.ldy + range.begin,
                               out.ldy);
            }
            add_bias(out, range, n_rows);
            return;
        }
        float* buffer = scratch.weight_rows[size_t(thread)].data();
        for (int64_t r0 = range.begin; r0 < range.end; r0 += group) {
            const int64_t n_w = std::min(group, range.end - r0);
            float* y = out.y + r0;
            if (type == DType::F32) {
                gemm_tile_f32(reinterpret_cast<const float*>(out.weight.row(r0)),
                              int64_t(out.weight.row_stride / sizeof(float)), n_w, x, cols, n_rows, cols, y, out.ldy);
            } else {
                for (int64_t i = 0; i < n_w; ++i) dequantize_row(type, out.weight.row(r0 + i), buffer + i * cols, cols);
                gemm_tile_f32(buffer, cols, n_w, x, cols, n_rows, cols, y, out.ldy);
            }
        }
        add_bias(out, range, n_rows);
    });
}

} // namespace

void matmul(ThreadPool& pool, const float* x, int64_t n_rows, std::span<const MatmulOutput> outputs,
            MatmulScratch& scratch, Activations mode) {
    if (outputs.empty() || n_rows <= 0) return;
    const int64_t cols = outputs[0].weight.cols;
    for (const auto& o : outputs)
        if (o.weight.cols != cols) throw std::invalid_argument("matmul: outputs differ in cols");
    if (mode == Activations::Float) {
        matmul_float(pool, x, n_rows, outputs, scratch, cols);
        return;
    }

    // Quantize the activations once for every distinct dot-product type.
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
        auto quantize = [&](int64_t t, int) {
            quantize_row(slot.type, x + t * cols, slot.data.data() + size_t(t) * slot.row_bytes, cols);
        };
        if (n_rows >= 4) pool.parallel_for(n_rows, quantize);
        else for (int64_t t = 0; t < n_rows; ++t) quantize(t, 0);
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
            // Activation tiles small enough to stay in L2 while the weight rows stream.
            const VecDotMultiFn multi = multis[range.output];
            for (int64_t t0 = 0; t0 < n_rows; t0 += kActivationTile) {
                const int n_act = int(std::min<int64_t>(kActivationTile, n_rows - t0));
                const uint8_t* act = slot.data.data() + size_t(t0) * slot.row_bytes;
                for (int64_t r = range.begin; r < range.end; ++r)
                    multi(cols, out.weight.row(r), act, slot.row_bytes, n_act, out.y + t0 * out.ldy + r, out.ldy);
            }
        }
        add_bias(out, range, n_rows);
    });
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
