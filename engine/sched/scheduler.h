// Continuous batching as pure bookkeeping (no tensors): which sequences run in the next
// forward step, with how many rows, in which pages. Each step packs the decode rows of
// running sequences first, then prefill chunks, under a token budget; admits waiting
// sequences by longest cached prefix while the queue is short and first come first
// served beyond that (and always the ones that waited too long); preempts the youngest
// running sequence (frees its pages; it is recomputed later, mostly from the cache) when
// the pool runs out of pages. Prefill goes by priority (arbor/priority.h): a lower rank
// computes prompt rows only in steps where no higher one does; beside a Normal sequence's
// decode, a Background one only a few (lower_rows_beside_decode) and an Idle one none.
//
// Per step, as in nano-vllm: schedule() plans, the engine runs the rows and samples,
// postprocess() appends the sampled ids and retires the sequences that ended. Every page
// reference the scheduler takes (sequences' pages, copy sources) it releases itself.
#pragma once

#include "sequence.h"

#include "kv/page_pool.h"
#include "kv/radix_cache.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

namespace arbor::sched {

// Copy the K/V of the first `positions` slots of cached page src into the sequence's own
// page dst before the step runs: the part of a cached page that matches a new sequence
// when the rest of that page does not. src is retained by the scheduler from schedule()
// until postprocess() (or the next schedule(), when the step failed), so that nothing
// evicts it before the copy is made.
struct PageCopy {
    int32_t src = -1;
    int32_t dst = -1;
    int32_t positions = 0;
};

struct Plan {
    std::vector<StepItem> items;
    std::vector<PageCopy> copies;
};

// The disk tier as the scheduler sees it (the engine implements it).
class DiskSource {
public:
    virtual ~DiskSource() = default;
    // How many whole pages of `tokens` (page i holding tokens[i*P, (i+1)*P)) the disk
    // holds in a row, chained from `after` (the key of the page before the first).
    virtual int32_t available(const kv::PageKey& after, std::span<const int32_t> tokens) = 0;
    // Starts reading seq->loading pages into seq->table.pages[seq->load_from ..) for
    // seq->load_ticket; the engine calls Scheduler::loaded() when they are in.
    virtual void start_load(Sequence* seq, const kv::PageKey& after) = 0;
    virtual void cancel_load(Sequence* seq) = 0;
};

struct SchedulerOptions {
    int32_t page_size = 16;
    int32_t max_batch_tokens = 512;
    int32_t max_running = 32;
    int32_t short_queue = 8;
    int32_t max_wait_steps = 64;
    uint64_t cache_namespace = 0;   // identifies the model in the prefix cache (mixed with each sequence's)
    // Fewest pages worth reading from disk: a shorter continuation is computed instead
    // (recomputing a few tokens costs less than a disk read and a wait).
    int32_t disk_min_pages = 4;
    // Prompt rows a Background sequence (a warm-up someone will soon need) may add to a
    // step that carries a Normal sequence's decode row: a whole chunk (max_batch_tokens)
    // beside it would make that step, and so the reply someone is reading, as slow as a
    // prefill step (a chat decoded at 0.2-10 tokens/s beside the warm-up of a restored
    // 6,400-token tab). An Idle sequence (a restored tab nobody waits for) adds none: it
    // runs once no Normal sequence decodes.
    int32_t lower_rows_beside_decode = 32;
};

class Scheduler {
public:
    Scheduler(kv::PagePool& pool, kv::RadixCache& cache, SchedulerOptions options);
    ~Scheduler() { release_copy_sources(); }
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    void enqueue(Sequence* seq, uint64_t step);
    // Removes a sequence wherever it is, offers its computed pages (the partly filled last
    // one as a tail) to the cache and releases its pages.
    void remove(Sequence* seq);
    // Plans the next step. Sequences in the result are running; the caller performs the
    // copies, runs the rows, samples, then calls postprocess().
    Plan schedule(uint64_t step);
    // After the step ran: releases the plan's copy sources, marks its rows computed
    // (offering newly full pages to the prefix cache), appends sampled[i] (one per item,
    // -1 where the item does not sample) to its sequence and asks `finished` whether the
    // sequence ended with it. Retires (see remove()) every sequence that ended and every
    // prefill-only one whose prompt is now computed, and returns them in item order.
    std::vector<Sequence*> postprocess(const Plan& plan, std::span<const int32_t> sampled,
                                       const std::function<bool(Sequence*)>& finished);

    // Continue prefix matches on disk (nullptr: no disk tier). The source must outlive
    // the scheduler's use of it.
    void set_disk(DiskSource* disk) { disk_ = disk; }
    // The first `ok` pages of a sequence's load are in its pages (the rest failed): the
    // sequence may run. Ignored for a sequence no longer loading that ticket.
    void loaded(Sequence* seq, uint64_t ticket, int32_t ok);
    int32_t loading() const;  // running sequences waiting for disk pages

    int32_t running() const { return int32_t(running_.size()); }
    int32_t waiting() const { return int32_t(waiting_.size()); }
    uint64_t preemptions() const { return preemptions_; }  // since construction
    const std::deque<Sequence*>& waiting_queue() const { return waiting_; }
    // Longest prefix of `tokens` the cache could serve now to a sequence of namespace
    // `ns` (at most tokens.size() - 1 tokens, so that one row remains to produce logits).
    // Reads the cache only: no page is retained and no entry counts as used.
    int32_t cached_prefix(const std::vector<int32_t>& tokens, uint64_t ns = 0) const;

private:
    // The radix cache's namespace for a sequence's namespace. XOR with the model's is a
    // bijection: distinct sequence namespaces never meet in the cache.
    uint64_t cache_key(uint64_t ns) const { return opt_.cache_namespace ^ ns; }
    bool ensure_pages(Sequence* seq, int32_t n_tokens);
    std::optional<int32_t> allocate_page();
    void preempt(Sequence* seq, uint64_t step);
    bool admit(Sequence* seq);
    // Starts a disk load continuing seq's in-memory match when it is worth it.
    bool load_from_disk(Sequence* seq, const kv::PageKey& after);
    void abandon_load(Sequence* seq);
    // leaving (removed or preempted): the partly filled last page is offered as well.
    void offer_to_cache(Sequence* seq, bool leaving = false);
    void release_pages(Sequence* seq);
    void release_copy_sources();
    std::vector<Sequence*> admission_order(uint64_t step);
    // 0 (Normal, or Background that waited max_wait_steps), 1 (Background), kIdleRank.
    static constexpr int kIdleRank = 2;
    int rank(const Sequence* seq, uint64_t step) const;
    // Preempts the youngest running Idle sequence that has no rows in `items`; false when
    // there is none.
    bool preempt_idle(const std::vector<StepItem>& items, uint64_t step);
    std::vector<StepItem> plan_rows(uint64_t step);

    kv::PagePool& pool_;
    kv::RadixCache& cache_;
    SchedulerOptions opt_;
    std::vector<Sequence*> running_;   // in arrival order
    std::deque<Sequence*> waiting_;    // in arrival order
    std::vector<PageCopy> copies_;     // collected while planning
    std::vector<PageCopy> copy_sources_held_;  // of the last plan, until postprocess()
    uint64_t preemptions_ = 0;
    DiskSource* disk_ = nullptr;
    uint64_t next_ticket_ = 1;
};

} // namespace arbor::sched
