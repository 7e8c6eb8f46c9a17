// Paged attention on the CPU (cpu_attention.h): the plan of a step's tasks, each task's
// scores, softmax and weighted sum of values, and the merge of a row's parts.
#include "cpu_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arbor {

namespace {

// fn(page, offset, count, at) for each page's slice of positions [begin, end), in order
// (`at`: the slice's first position minus begin).
template <class F>
void for_each_page(const SequenceRows& seq, int32_t page_size, int32_t begin, int32_t end, F&& fn) {
    for (int32_t s = begin; s < end;) {
        const int32_t offset = s % page_size, count = std::min(page_size - offset, end - s);
        fn(seq.block_table[size_t(s / page_size)], offset, count, s - begin);
        s += count;
    }
}

} // namespace

CpuAttention::CpuAttention(const ModelConfig& cfg, const KvPages& kv, ThreadPool& pool, int32_t attention_part)
    : cfg_(cfg), kv_(kv), pool_(pool),
      attention_part_(attention_part > 0 ? attention_part : std::numeric_limits<int32_t>::max()),
      group_(cfg.n_head / cfg.n_head_kv), scratch_(size_t(pool.size())) {}

// One task per (block of up to kAttentionRows rows of a sequence, KV head, part): the
// query heads sharing that KV head go through each page together, so each loaded key or
// value chunk serves up to three heads of each row at once. A lone row's task takes a
// chunk of KV heads, all of them unless the step then had fewer than kTasksPerThread
// tasks per thread. Each head's arithmetic is the same as alone, in any task.
void CpuAttention::plan(const ForwardBatch& batch, std::span<const int32_t> row_pos) {
    row_pos_.assign(row_pos.begin(), row_pos.end());
    tasks_.clear();
    merges_.clear();
    const int64_t rows = int64_t(row_pos_.size());
    first_partial_.assign(size_t(rows), -1);
    int64_t partials = 0;
    for (int64_t t = 0; t < rows; ++t) {
        const int32_t parts = parts_of(t);
        if (parts == 1) continue;
        first_partial_[size_t(t)] = partials;
        for (int32_t h = 0; h < cfg_.n_head_kv; ++h) merges_.push_back({t, h, parts, partials + h * parts});
        partials += int64_t(cfg_.n_head_kv) * parts;
    }
    // Blocks of equal size, so that the tasks of a short prompt are too.
    auto block_of = [](const SequenceRows& seq) {
        const int32_t blocks = (seq.n_rows + kAttentionRows - 1) / kAttentionRows;
        return (seq.n_rows + blocks - 1) / blocks;
    };
    // The tasks with every lone row's KV heads in one task: chunks of them if too few.
    int64_t whole = 0;
    for (const SequenceRows& seq : batch.sequences)
        for (int64_t first = seq.first_row; first < seq.first_row + seq.n_rows; first += block_of(seq)) {
            const int64_t last = std::min<int64_t>(first + block_of(seq), seq.first_row + seq.n_rows) - 1;
            whole += int64_t(seq.n_rows == 1 ? 1 : cfg_.n_head_kv) * parts_of(last);
        }
    const int64_t wanted = int64_t(kTasksPerThread) * pool_.size();
    const int32_t chunks = int32_t(std::clamp<int64_t>((wanted + whole - 1) / std::max<int64_t>(whole, 1), 1, cfg_.n_head_kv));
    const int32_t lone_heads = (cfg_.n_head_kv + chunks - 1) / chunks;
    for (size_t s = 0; s < batch.sequences.size(); ++s) {
        const SequenceRows& seq = batch.sequences[s];
        const int32_t block = block_of(seq), heads = seq.n_rows == 1 ? lone_heads : 1;
        for (int64_t first = seq.first_row; first < seq.first_row + seq.n_rows; first += block) {
            const int64_t last = std::min<int64_t>(first + block, seq.first_row + seq.n_rows) - 1;
            for (int32_t h = 0; h < cfg_.n_head_kv; h += heads)
                for (int32_t p = 0; p < parts_of(last); ++p) {
                    // Rows reach part p from some row on: positions ascend.
                    int64_t from = first;
                    while (parts_of(from) <= p) ++from;
                    tasks_.push_back({from, int32_t(last + 1 - from), h, std::min(heads, cfg_.n_head_kv - h), p,
                                      int32_t(s)});
                }
        }
    }
    partial_out_.resize(size_t(partials) * size_t(group_) * size_t(cfg_.head_dim));
    partial_stats_.resize(size_t(partials) * size_t(group_));
    int32_t longest = 0;
    for (int64_t t = 0; t < rows; ++t) longest = std::max(longest, std::min(row_pos_[size_t(t)] + 1, attention_part_));
    const size_t task_heads = size_t(std::max(kAttentionRows * group_, cfg_.n_head));
    for (Scratch& a : scratch_) {
        a.queries.resize(task_heads * size_t(cfg_.head_dim));
        a.scores.resize(task_heads * size_t(longest));
        a.values.resize(size_t(longest) * size_t(cfg_.head_dim));
        a.outs.resize(size_t(std::max(kAttentionRows, cfg_.n_head_kv)));
    }
}

void CpuAttention::run(const ForwardBatch& batch, int32_t layer, const float* q, float* out,
                       std::span<const float> sinks) {
    sinks_ = sinks;
    pool_.parallel_for(int64_t(tasks_.size()), [&](int64_t i, int thread) {
        const Task& task = tasks_[size_t(i)];
        attend(layer, batch.sequences[size_t(task.seq)], task, q, out, scratch_[size_t(thread)]);
    });
    // Each (row, KV head) merges alone, so across the pool: on the calling thread alone
    // they kept the other waiting (1B shape at depth 4096, 2 threads, alternating runs:
    // 7.04-7.11 -> 6.92-6.98 ms per token).
    pool_.parallel_for(int64_t(merges_.size()),
                       [&](int64_t i, int thread) { merge_parts(merges_[size_t(i)], out, scratch_[size_t(thread)].shares); });
}

// In a sliding-window layer a row sees only its last sliding_window positions: its scores
// before them are computed with the task's (whose first row reaches furthest back) but left
// out of its softmax and sum.
CpuAttention::TaskPositions CpuAttention::positions_of(int32_t layer, const Task& task) const {
    TaskPositions at{};
    at.begin = part_begin(task.part);
    const bool local = cfg_.is_local(layer);
    for (int32_t i = 0; i < task.rows; ++i) {
        at.ends[size_t(i)] = part_end(task.row + i, task.part);
        const int32_t window_start = local ? row_pos_[size_t(task.row + i)] - cfg_.sliding_window + 1 : 0;
        at.starts[size_t(i)] = std::max(at.begin, window_start);
    }
    // The last row has the most positions; the first reaches furthest back (positions ascend).
    at.span = at.ends[size_t(task.rows - 1)] - at.begin;
    at.from = std::min(at.starts[0], at.begin + at.span);
    return at;
}

float* CpuAttention::part_output(float* out, int64_t t, int32_t kv_head, int32_t part, SoftmaxStats*& stats) {
    const int64_t D = cfg_.head_dim;
    const int64_t first = first_partial_[size_t(t)];
    if (first < 0) {
        stats = nullptr;
        return &out[size_t(t * int64_t(cfg_.n_head) * D + int64_t(kv_head) * group_ * D)];
    }
    const int64_t partial = first + int64_t(kv_head) * parts_of(t) + part;
    stats = &partial_stats_[size_t(partial * group_)];
    return &partial_out_[size_t(partial * group_ * D)];
}

// The query heads of KV heads task.kv_head .., for each row of the task over its positions
// in part task.part: scores, softmax, weighted sum of values. Each row's output (or
// partial) is normalized over the part's positions alone; a part wholly before a row's
// window gives it zeros with softmax statistics {-inf, 0}, which the merge weighs by 0.
void CpuAttention::attend(int32_t layer, const SequenceRows& seq, const Task& task, const float* q, float* out,
                          Scratch& scratch) {
    const int64_t D = cfg_.head_dim, QD = int64_t(cfg_.n_head) * D;
    const TaskPositions at = positions_of(layer, task);
    // Row i's query heads of KV head k at first_head(task, k, i) * D. They carry the
    // softmax's 1 / sqrt(D), which saves a pass over the scores (for 64-element heads a
    // power of two, so the scores' bits are those of scaling after).
    const float scale = cfg_.query_scale();
    for (int32_t k = 0; k < task.kv_heads; ++k)
        for (int32_t i = 0; i < task.rows; ++i) {
            const float* row = &q[size_t((task.row + i) * QD + int64_t(task.kv_head + k) * group_ * D)];
            std::transform(row, row + group_ * D, &scratch.queries[first_head(task, k, i) * size_t(D)],
                           [&](float x) { return x * scale; });
        }
    score_keys(layer, seq, task, at, scratch);
    for (int32_t k = 0; k < task.kv_heads; ++k)
        for (int32_t i = 0; i < task.rows; ++i) {
            SoftmaxStats* stats = nullptr;
            float* o = scratch.outs[size_t(k * task.rows + i)] =
                part_output(out, task.row + i, task.kv_head + k, task.part, stats);
            const int32_t n = std::max(0, at.ends[size_t(i)] - at.starts[size_t(i)]);
            float* scores = row_scores(scratch, task, k, i, at.span);
            for (int32_t h = 0; h < group_; ++h) {
                float* p = scores + size_t(h) * size_t(at.span) + (at.starts[size_t(i)] - at.begin);
                const SoftmaxStats s = softmax(p, n);
                if (stats) stats[h] = s;  // a part: the sink joins at the merge
                else if (!sinks_.empty() && n > 0) {
                    const double sum = double(s.sum);
                    const float share = float(sum / (sum + sink_term((task.kv_head + k) * group_ + h, s.max)));
                    for (int32_t j = 0; j < n; ++j) p[j] *= share;
                }
            }
            std::fill(o, o + group_ * D, 0.0f);
        }
    sum_values(layer, seq, task, at, scratch);
}

// Scores of the task's rows over positions [from, begin + span), page by page and within a
// page KV head by KV head (their keys lie in that order): see row_scores. Consecutive rows
// that see the same keys of a page score them in one call (their query heads side by side,
// so the kernel's tiles take two rows' heads at once); a score's bits do not depend on its
// tile.
void CpuAttention::score_keys(int32_t layer, const SequenceRows& seq, const Task& task, const TaskPositions& at,
                              Scratch& scratch) {
    const int64_t D = cfg_.head_dim;
    const int32_t P = kv_.page_size(), span = at.span, begin = at.begin;
    const KvType type = kv_.type();
    // Row i's positions of the page slice starting `from_begin` that holds `count`.
    auto within = [&](int32_t i, int32_t from_begin, int32_t count) {
        return std::min(count, at.ends[size_t(i)] - begin - from_begin);
    };
    // Prefetch, for a task of one KV head: pages are scattered over the pool, so while the
    // key loop computes a page it asks for the next page's keys and for this page's value
    // rows (the weighted sum reads them only after the loop; README.md, Numerics). A task
    // of several KV heads reads runs long enough for the hardware prefetcher, and asking
    // for them as well cost it 10-20% more CPU time (1B shape at depth 4096, alternating
    // runs). Kept inside this function: a function of prefetches alone has no effect that
    // GCC sees, and its calls were dropped.
    const size_t row_bytes =
        size_t(D) * (type == KvType::F32 ? sizeof(float) : type == KvType::F16 ? sizeof(uint16_t) : sizeof(int8_t));
    auto prefetch = [&](const void* from, size_t bytes) {
        const auto* p = static_cast<const char*>(from);
        for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
    };
    const int32_t key_stride = kv_.key_stride();
    for_each_page(seq, P, at.from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t from_begin) {
        from_begin += at.from - begin;
        if (task.kv_heads == 1) {
            // Any slot of a page's keys needs every row of its columns.
            if (const int32_t next = begin + from_begin + count; next < begin + span)
                prefetch(kv_.keys(layer, seq.block_table[size_t(next / P)], task.kv_head), kv_.key_head_bytes());
            prefetch(kv_.values(layer, page, task.kv_head, offset), size_t(count) * row_bytes);
        }
        for (int32_t k = 0; k < task.kv_heads; ++k) {
            const int32_t kv_head = task.kv_head + k;
            const void* keys = kv_.keys(layer, page, kv_head);
            for (int32_t i = 0, n = 1; i < task.rows; i += n) {
                const int32_t c = within(i, from_begin, count);
                for (n = 1; i + n < task.rows && within(i + n, from_begin, count) == c;) ++n;
                if (c <= 0) continue;
                const float* q = &scratch.queries[first_head(task, k, i) * size_t(D)];
                float* scores = row_scores(scratch, task, k, i, span) + from_begin;
                if (type == KvType::F16)
                    dot_columns_f16(q, n * group_, static_cast<const uint16_t*>(keys), key_stride, offset, c, D,
                                    scores, span);
                else if (type == KvType::Q8_0)
                    dot_columns_q8_0(q, n * group_, static_cast<const int8_t*>(keys),
                                     kv_.key_scales(layer, page, kv_head), key_stride, offset, c, D, scores, span);
                else
                    dot_columns_f32(q, n * group_, static_cast<const float*>(keys), key_stride, offset, c, D, scores,
                                    span);
            }
        }
    });
}

// Row i's output of KV head k (scratch.outs) += its softmax weights times the value rows of
// its positions. A lone row adds each page's value rows straight from the page, its KV
// heads' in turn (their rows lie in that order). A block of rows (one KV head) first
// gathers the part's value rows once, as floats in position order (F16 and Q8_0 converted
// exactly), and each row then adds all of its own in one call, its sums held in registers
// from the first to the last (called page by page, they went through memory at every
// page). The F32 kernel computes what the F16 or Q8_0 one would (cpu_ops.h), so every row
// gets the same bits as a lone row reading the pages directly.
void CpuAttention::sum_values(int32_t layer, const SequenceRows& seq, const Task& task, const TaskPositions& at,
                              Scratch& scratch) {
    const int64_t D = cfg_.head_dim;
    const int32_t P = kv_.page_size(), span = at.span, begin = at.begin;
    const KvType type = kv_.type();
    if (task.rows == 1) {
        for_each_page(seq, P, at.from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t slice) {
            for (int32_t k = 0; k < task.kv_heads; ++k) {
                const int32_t kv_head = task.kv_head + k;
                const void* rows = kv_.values(layer, page, kv_head, offset);
                const float* weights = row_scores(scratch, task, k, 0, span) + (at.from - begin) + slice;
                float* o = scratch.outs[size_t(k)];
                if (type == KvType::F16)
                    accumulate_rows_f16(weights, span, group_, static_cast<const uint16_t*>(rows), count, D, o);
                else if (type == KvType::Q8_0)
                    accumulate_rows_q8_0(weights, span, group_, static_cast<const int8_t*>(rows),
                                         kv_.value_scales(layer, page, kv_head, offset), count, D, o);
                else
                    accumulate_rows_f32(weights, span, group_, static_cast<const float*>(rows), count, D, o);
            }
        });
        return;
    }
    float* values = scratch.values.data();  // from position at.from on
    for_each_page(seq, P, at.from, begin + span, [&](int32_t page, int32_t offset, int32_t count, int32_t slice) {
        const void* rows = kv_.values(layer, page, task.kv_head, offset);
        float* to = values + size_t(slice) * size_t(D);
        if (type == KvType::F16) f32_from_f16(static_cast<const uint16_t*>(rows), to, int64_t(count) * D);
        else if (type == KvType::Q8_0)
            f32_from_q8_0(static_cast<const int8_t*>(rows), kv_.value_scales(layer, page, task.kv_head, offset), count,
                          D, to);
        else std::copy_n(static_cast<const float*>(rows), size_t(count) * size_t(D), to);
    });
    for (int32_t i = 0; i < task.rows; ++i)
        if (const int32_t n = at.ends[size_t(i)] - at.starts[size_t(i)]; n > 0)
            accumulate_rows_f32(row_scores(scratch, task, 0, i, span) + (at.starts[size_t(i)] - begin), span, group_,
                                values + size_t(at.starts[size_t(i)] - at.from) * size_t(D), n, D,
                                scratch.outs[size_t(i)]);
}

// The parts of one (row, KV head): each head's output is the parts' outputs weighted by
// their share of the whole softmax sum, sum_p * exp(max_p - max), in part order.
void CpuAttention::merge_parts(const Merge& merge, float* out, std::vector<double>& share) {
    const int64_t D = cfg_.head_dim, QD = int64_t(cfg_.n_head) * D;
    float* row_out = &out[size_t(merge.row * QD + int64_t(merge.kv_head) * group_ * D)];
    share.resize(size_t(merge.parts));
    for (int32_t h = 0; h < group_; ++h) {
        auto part = [&](int32_t p) { return size_t((merge.first + p) * group_ + h); };
        float max = -INFINITY;
        for (int32_t p = 0; p < merge.parts; ++p) max = std::max(max, partial_stats_[part(p)].max);
        double total = 0.0;
        for (int32_t p = 0; p < merge.parts; ++p) {
            const SoftmaxStats& s = partial_stats_[part(p)];
            total += share[size_t(p)] = double(s.sum) * std::exp(double(s.max) - double(max));
        }
        total += sink_term(merge.kv_head * group_ + h, max);
        float* o = row_out + h * D;
        std::fill(o, o + D, 0.0f);
        for (int32_t p = 0; p < merge.parts; ++p)
            axpy_f32(float(share[size_t(p)] / total), &partial_out_[part(p) * size_t(D)], o, D);
    }
}

double CpuAttention::sink_term(int32_t head, float max) const {
    // In double: a sink far above every score makes the others' share near 0, not inf / inf.
    return sinks_.empty() ? 0.0 : std::exp(double(sinks_[size_t(head)]) - double(max));
}

} // namespace arbor
