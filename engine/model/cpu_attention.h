// Paged attention on the CPU. Each row of a step (a prompt row or a decode token) attends
// with its query heads to the keys and values of its sequence at positions 0 .. its own,
// read through the sequence's block table from the KV pages (kv_pages.h):
//   out_h = softmax(q_h . k_j * query_scale over j) . v_j
// With learned sinks (gpt-oss) head h's softmax has one more logit, sink_h, that has no
// value: out_h = sum_j exp(s_j) v_j / (sum_j exp(s_j) + exp(sink_h)).
// Query heads share their KV head in groups of n_head / n_head_kv (grouped-query
// attention); a sliding-window layer's row sees only its last sliding_window positions.
// tests/model/paged_attention_reference.cpp computes the same naively, in double.
//
// How the work is divided (the plan, the same in every layer of a step):
// - a task is one KV head's query heads for up to kAttentionRows consecutive rows of a
//   sequence, so each page a prompt's rows share is read (and converted) once for them all;
// - a lone row's task takes several KV heads (all, unless the step has too few tasks for
//   the pool): a page's keys of consecutive KV heads lie side by side, as do its values,
//   so the task reads each page in two long runs instead of two short ones per head (runs
//   of 2 KiB scattered over memory read at well under half the speed of 12-32 KiB runs);
// - a row with more than attention_part positions attends in parts, each its own task,
//   merged afterwards by the parts' softmax statistics (as flash-decoding does), so that
//   a lone decode row still gives every core work. Parts depend only on the row's
//   position, so a row's bits never depend on its batch.
#pragma once

#include "arbor/backend.h"
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/thread_pool.h"
#include "arbor/model.h"
#include "kv_pages.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace arbor {

class CpuAttention {
public:
    // attention_part: positions per part (BackendOptions::attention_part; <= 0 never splits).
    CpuAttention(const ModelConfig& cfg, const KvPages& kv, ThreadPool& pool, int32_t attention_part);

    // Divides the step's attention into tasks; row_pos holds each row's position.
    void plan(const ForwardBatch& batch, std::span<const int32_t> row_pos);
    // out (rows x n_head * head_dim) = every row's attention in layer `layer`, from its
    // query heads q (rows x n_head * head_dim, positioned); the step's own K/V are stored.
    // sinks: the layer's n_head sink logits, or empty. Needs the plan of this batch.
    void run(const ForwardBatch& batch, int32_t layer, const float* q, float* out, std::span<const float> sinks = {});

private:
    // Consecutive rows of one sequence that one task serves at most: a prompt's rows attend
    // to the same pages, so each page is read (and an F16 page converted) once for them all
    // (README.md, Numerics). Decode rows, one per sequence, are unaffected.
    static constexpr int32_t kAttentionRows = 8;
    // Tasks per thread of the pool below which lone rows' KV heads are split over tasks.
    static constexpr int32_t kTasksPerThread = 8;

    // Query heads of KV heads kv_head .. kv_head + kv_heads - 1 for rows row .. row + rows - 1
    // (of sequence seq, positions ascending), each over its positions in part `part`.
    // kv_heads > 1 only when rows == 1.
    struct Task {
        int64_t row;
        int32_t rows, kv_head, kv_heads, part, seq;
    };
    // A row and KV head attended in parts: its parts' results are partials first .. + parts - 1.
    struct Merge {
        int64_t row;
        int32_t kv_head, parts;
        int64_t first;
    };
    // A thread's buffers for its tasks.
    struct Scratch {
        std::vector<float> queries;  // per KV head of the task: its rows' query heads, side by side
        std::vector<float> scores;   // per KV head, row and head: its scores over the part's positions
        std::vector<float> values;   // the part's value rows, as floats
        std::vector<float*> outs;    // per KV head and row: where its output (or partial) goes
        std::vector<double> shares;  // merge_parts': each part's share of a head's softmax sum
    };
    // Which positions of a task's part each of its rows attends to.
    struct TaskPositions {
        int32_t begin;   // the part's first position
        int32_t span;    // positions of the part the task's last row reaches
        int32_t from;    // the first position any row of the task attends to
        std::array<int32_t, kAttentionRows> starts, ends;  // row i: [starts[i], ends[i]), none when they cross
    };

    int32_t parts_of(int64_t t) const {
        return int32_t((int64_t(row_pos_[size_t(t)]) + attention_part_) / attention_part_);
    }
    int32_t part_begin(int32_t part) const { return int32_t(int64_t(part) * attention_part_); }
    int32_t part_end(int64_t t, int32_t part) const {
        return int32_t(std::min<int64_t>(row_pos_[size_t(t)] + 1, int64_t(part + 1) * attention_part_));
    }
    TaskPositions positions_of(int32_t layer, const Task& task) const;
    // Which of the task's query heads (per KV head k of the task, rows in order) come first.
    size_t first_head(const Task& task, int32_t k, int32_t i) const {
        return (size_t(k) * size_t(task.rows) + size_t(i)) * size_t(group_);
    }
    // Row i's scores of head h of the task's KV head k at row_scores(k, i) + h * span +
    // (position - the part's first): consecutive rows' heads of one KV head side by side.
    float* row_scores(Scratch& scratch, const Task& task, int32_t k, int32_t i, int32_t span) const {
        return &scratch.scores[first_head(task, k, i) * size_t(span)];
    }
    // Where row t's heads of kv_head write part `part`: the output, or its partial (then
    // `stats` receives the part's softmax statistics).
    float* part_output(float* out, int64_t t, int32_t kv_head, int32_t part, SoftmaxStats*& stats);

    void attend(int32_t layer, const SequenceRows& seq, const Task& task, const float* q, float* out,
                Scratch& scratch);
    void score_keys(int32_t layer, const SequenceRows& seq, const Task& task, const TaskPositions& at,
                    Scratch& scratch);
    void sum_values(int32_t layer, const SequenceRows& seq, const Task& task, const TaskPositions& at,
                    Scratch& scratch);
    void merge_parts(const Merge& merge, float* out, std::vector<double>& share);
    // Query head `head`'s sink term in a softmax of largest score `max`: exp(sink - max),
    // added to the softmax's sum; 0 without sinks.
    double sink_term(int32_t head, float max) const;

    const ModelConfig& cfg_;
    const KvPages& kv_;
    ThreadPool& pool_;
    const int32_t attention_part_;
    const int32_t group_;  // query heads per KV head
    std::span<const float> sinks_;  // the running layer's

    // The plan.
    std::vector<int32_t> row_pos_;
    std::vector<Task> tasks_;
    std::vector<Merge> merges_;
    std::vector<int64_t> first_partial_;  // per row: its first partial, -1 when it has one part
    // Parts' results before their merge.
    std::vector<float> partial_out_;           // per part: group x head_dim, normalized within the part
    std::vector<SoftmaxStats> partial_stats_;  // per part: one per query head of the group

    std::vector<Scratch> scratch_;  // per thread of the pool
};

} // namespace arbor
