#include "scheduler.h"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace arbor::sched {
namespace {

void insert_by_arrival(std::vector<Sequence*>& v, Sequence* seq) {
    v.insert(std::upper_bound(v.begin(), v.end(), seq,
                              [](const Sequence* a, const Sequence* b) { return a->arrival < b->arrival; }),
             seq);
}

void insert_by_arrival(std::deque<Sequence*>& q, Sequence* seq) {
    q.insert(std::upper_bound(q.begin(), q.end(), seq,
                              [](const Sequence* a, const Sequence* b) { return a->arrival < b->arrival; }),
             seq);
}

} // namespace

Scheduler::Scheduler(kv::PagePool& pool, kv::RadixCache& cache, SchedulerOptions options)
    : pool_(pool), cache_(cache), opt_(options) {
    if (opt_.page_size <= 0 || opt_.max_batch_tokens <= 0 || opt_.max_running <= 0)
        throw std::invalid_argument("scheduler: page size, batch tokens and running limit must be positive");
}

void Scheduler::enqueue(Sequence* seq, uint64_t step) {
    seq->running = false;
    seq->queued_at_step = step;
    insert_by_arrival(waiting_, seq);
}

void Scheduler::abandon_load(Sequence* seq) {
    if (seq->loading == 0) return;
    if (disk_) disk_->cancel_load(seq);
    seq->loading = 0;
}

void Scheduler::remove(Sequence* seq) {
    abandon_load(seq);
    std::erase(running_, seq);
    std::erase(waiting_, seq);
    offer_to_cache(seq, /*leaving=*/true);
    release_pages(seq);
    seq->running = false;
}

int32_t Scheduler::cached_prefix(const std::vector<int32_t>& tokens, uint64_t ns) const {
    if (tokens.size() < 2) return 0;
    return cache_.matched_tokens(cache_key(ns), std::span(tokens.data(), tokens.size() - 1));
}

std::optional<int32_t> Scheduler::allocate_page() {
    if (auto page = pool_.allocate()) return page;
    if (cache_.evict(1) > 0) return pool_.allocate();
    return std::nullopt;
}

bool Scheduler::ensure_pages(Sequence* seq, int32_t n_tokens) {
    const int32_t need = kv::BlockTable::pages_for(n_tokens, opt_.page_size);
    while (int32_t(seq->table.pages.size()) < need) {
        const auto page = allocate_page();
        if (!page) return false;
        seq->table.pages.push_back(*page);
    }
    return true;
}

void Scheduler::offer_to_cache(Sequence* seq, bool leaving) {
    const int32_t P = opt_.page_size;
    const int32_t full = std::min<int32_t>(seq->computed / P, int32_t(seq->table.pages.size()));
    if (leaving && seq->computed % P != 0 && seq->computed / P < int32_t(seq->table.pages.size())) {
        // The partly filled last page goes too, as a tail: the next turn of a conversation
        // starts with exactly these tokens. cached_pages stays whole-page only.
        cache_.insert(cache_key(seq->cache_namespace), std::span(seq->tokens.data(), size_t(seq->computed)),
                      std::span(seq->table.pages.data(), size_t(full) + 1), /*partial_tail=*/true);
        seq->cached_pages = std::max(seq->cached_pages, full);
        return;
    }
    if (full <= seq->cached_pages) return;
    cache_.insert(cache_key(seq->cache_namespace), std::span(seq->tokens.data(), size_t(full) * size_t(P)),
                  std::span(seq->table.pages.data(), size_t(full)));
    seq->cached_pages = full;
}

void Scheduler::release_pages(Sequence* seq) {
    for (int32_t page : seq->table.pages) pool_.release(page);
    seq->table.pages.clear();
    seq->computed = 0;
    seq->cached_pages = 0;
}

void Scheduler::preempt(Sequence* seq, uint64_t) {
    abandon_load(seq);
    std::erase(running_, seq);
    offer_to_cache(seq, /*leaving=*/true);
    release_pages(seq);
    seq->running = false;
    ++seq->preemptions;
    ++preemptions_;
    // queued_at_step keeps its old value: a preempted sequence soon counts as overdue
    // and is admitted before newer arrivals.
    insert_by_arrival(waiting_, seq);
}

bool Scheduler::load_from_disk(Sequence* seq, const kv::PageKey& after) {
    if (!disk_) return false;
    const int32_t P = opt_.page_size;
    // Whole pages only, and at least one row left to compute for the logits.
    const int32_t whole = (int32_t(seq->tokens.size()) - 1) / P;
    const int32_t from = seq->computed / P;
    if (whole - from < opt_.disk_min_pages) return false;
    const auto rest = std::span(seq->tokens.data() + size_t(from) * size_t(P), size_t(whole - from) * size_t(P));
    const int32_t n = disk_->available(after, rest);
    if (n < opt_.disk_min_pages) return false;
    // Pages for the loaded positions and the first computed row, or no load at all.
    if (!ensure_pages(seq, (from + n) * P + 1)) {
        while (int32_t(seq->table.pages.size()) > from) {
            pool_.release(seq->table.pages.back());
            seq->table.pages.pop_back();
        }
        return false;
    }
    seq->load_from = from;
    seq->loading = n;
    seq->load_ticket = next_ticket_++;
    disk_->start_load(seq, after);
    return true;
}

void Scheduler::loaded(Sequence* seq, uint64_t ticket, int32_t ok) {
    if (seq->loading == 0 || seq->load_ticket != ticket) return;
    const int32_t memory = seq->load_from * opt_.page_size;
    seq->computed = (seq->load_from + std::clamp(ok, 0, seq->loading)) * opt_.page_size;
    seq->loading = 0;
    if (seq->cached_prompt_tokens < 0) {
        seq->cached_prompt_tokens = std::min(seq->computed, seq->prompt_len);
        seq->disk_prompt_tokens = std::max(0, seq->cached_prompt_tokens - memory);
    }
    offer_to_cache(seq);
}

int32_t Scheduler::loading() const {
    return int32_t(std::count_if(running_.begin(), running_.end(), [](const Sequence* s) { return s->loading > 0; }));
}

bool Scheduler::admit(Sequence* seq) {
    const size_t copies_before = copies_.size();
    bool from_disk = false;
    if (seq->tokens.size() >= 2) {
        kv::PartialPage partial;
        kv::PageKey last_key;
        seq->table.pages = cache_.match(cache_key(seq->cache_namespace),
                                        std::span(seq->tokens.data(), seq->tokens.size() - 1), &partial, &last_key);
        seq->computed = int32_t(seq->table.pages.size()) * opt_.page_size;
        seq->cached_pages = int32_t(seq->table.pages.size());
        from_disk = load_from_disk(seq, last_key);
        if (from_disk && partial.page >= 0) {
            // The disk continues the whole pages further than a cached page's head would.
            pool_.release(partial.page);
        } else if (partial.page >= 0) {
            // The matching head of the next cached page is copied into a page of our own.
            if (const auto own = allocate_page()) {
                copies_.push_back({partial.page, *own, partial.tokens});
                seq->table.pages.push_back(*own);
                seq->computed += partial.tokens;
            } else {
                pool_.release(partial.page);
            }
        }
    }
    // At least the first page of new rows must be obtainable, else the sequence waits
    // (and the copy planned for it is dropped, with the cached page it retained).
    if (!from_disk && !ensure_pages(seq, seq->computed + 1)) {
        for (size_t i = copies_before; i < copies_.size(); ++i) pool_.release(copies_[i].src);
        copies_.resize(copies_before);
        release_pages(seq);
        return false;
    }
    if (seq->cached_prompt_tokens < 0 && !from_disk) seq->cached_prompt_tokens = std::min(seq->computed, seq->prompt_len);
    std::erase(waiting_, seq);
    seq->running = true;
    insert_by_arrival(running_, seq);
    return true;
}

std::vector<Sequence*> Scheduler::admission_order(uint64_t step) {
    std::vector<Sequence*> overdue, rest;
    for (Sequence* s : waiting_)
        (step - s->queued_at_step >= uint64_t(opt_.max_wait_steps) ? overdue : rest).push_back(s);
    if (int32_t(waiting_.size()) <= opt_.short_queue && rest.size() > 1) {
        std::vector<std::pair<int32_t, Sequence*>> keyed;
        for (Sequence* s : rest) keyed.emplace_back(cached_prefix(s->tokens, s->cache_namespace), s);
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        for (size_t i = 0; i < rest.size(); ++i) rest[i] = keyed[i].second;
    }
    overdue.insert(overdue.end(), rest.begin(), rest.end());
    return overdue;
}

Plan Scheduler::schedule(uint64_t step) {
    release_copy_sources();  // a plan never postprocessed (its step failed)
    copies_.clear();
    Plan plan;
    plan.items = plan_rows(step);
    plan.copies = copies_;
    copy_sources_held_ = std::move(copies_);
    copies_.clear();
    return plan;
}

void Scheduler::release_copy_sources() {
    for (const PageCopy& copy : copy_sources_held_) pool_.release(copy.src);
    copy_sources_held_.clear();
}

int Scheduler::rank(const Sequence* seq, uint64_t step) const {
    switch (seq->priority) {
    case Priority::Normal: return 0;
    case Priority::Background: return step - seq->queued_at_step < uint64_t(opt_.max_wait_steps) ? 1 : 0;
    case Priority::Idle: return kIdleRank;
    }
    return kIdleRank;
}

bool Scheduler::preempt_idle(const std::vector<StepItem>& items, uint64_t step) {
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
        Sequence* seq = *it;
        if (seq->priority != Priority::Idle) continue;
        if (std::any_of(items.begin(), items.end(), [&](const StepItem& item) { return item.seq == seq; })) continue;
        preempt(seq, step);
        return true;
    }
    return false;
}

std::vector<StepItem> Scheduler::plan_rows(uint64_t step) {
    std::vector<StepItem> items;
    int32_t budget = opt_.max_batch_tokens;

    // Decode rows first: one per running sequence with its prompt done.
    for (size_t i = 0; i < running_.size() && budget > 0;) {
        Sequence* seq = running_[i];
        if (seq->pending() != 1 || seq->loading > 0) {
            ++i;
            continue;
        }
        bool placed = ensure_pages(seq, seq->computed + 1);
        // Out of pages: preempt the youngest running sequence until this one fits or is
        // itself the youngest (an Idle one takes nobody's pages).
        while (!placed && running_.back() != seq && seq->priority != Priority::Idle) {
            preempt(running_.back(), step);
            placed = ensure_pages(seq, seq->computed + 1);
        }
        if (!placed) {
            preempt(seq, step);
            continue;  // running_[i] is now the next sequence
        }
        items.push_back({seq, seq->computed, 1, true});
        --budget;
        ++i;
    }

    // Prefill chunks of running sequences, then of newly admitted ones.
    auto add_chunk = [&](Sequence* seq) {
        int32_t n = std::min(seq->pending(), budget);
        if (n <= 0) return;
        if (!ensure_pages(seq, seq->computed + n)) {
            // Take what the pages already held allow.
            n = int32_t(seq->table.pages.size()) * opt_.page_size - seq->computed;
            if (n <= 0) return;
        }
        items.push_back({seq, seq->computed, n, seq->computed + n == int32_t(seq->tokens.size())});
        budget -= n;
    };
    // One pass per rank, highest first; a rank prefills only in a step where no higher
    // one did. Background sequences that waited max_wait_steps rank as Normal.
    const std::vector<Sequence*> order = admission_order(step);
    const bool decodes_normal =
        std::any_of(items.begin(), items.end(), [&](const StepItem& item) { return rank(item.seq, step) == 0; });
    auto prefill_pass = [&](int r) {
        // Later passes rank lower still, so the cap may stay for them; Idle ones get no rows
        // (nor admission) beside a Normal decode.
        if (r > 0 && decodes_normal) budget = std::min(budget, r == kIdleRank ? 0 : opt_.lower_rows_beside_decode);
        bool prefilled = false;
        for (Sequence* seq : running_) {
            if (seq->pending() <= 1 || seq->loading > 0 || budget <= 0 || rank(seq, step) != r) continue;
            const size_t before = items.size();
            add_chunk(seq);
            prefilled |= items.size() > before;
        }
        if (r == kIdleRank) {
            // One Idle sequence at a time, and none admitted while a higher one waits
            // (it would take the pages that one needs).
            const auto busy = [&](const Sequence* s) { return s->priority == Priority::Idle; };
            const auto higher = [&](const Sequence* s) { return rank(s, step) < kIdleRank; };
            if (std::any_of(running_.begin(), running_.end(), busy) ||
                std::any_of(waiting_.begin(), waiting_.end(), higher))
                return prefilled;
        }
        for (Sequence* seq : order) {
            if (seq->running || rank(seq, step) != r) continue;
            if (budget <= 0) break;
            // A higher sequence takes an Idle one's place and pages rather than wait.
            const bool may_preempt = r < kIdleRank;
            if (int32_t(running_.size()) >= opt_.max_running && !(may_preempt && preempt_idle(items, step))) break;
            bool admitted = admit(seq);
            while (!admitted && may_preempt && preempt_idle(items, step)) admitted = admit(seq);
            if (!admitted) break;  // first come, first served: nobody overtakes a blocked request
            if (seq->loading == 0) {  // else it joins a later step, when its pages are in
                const size_t before = items.size();
                add_chunk(seq);
                prefilled |= items.size() > before;
            }
            if (r == kIdleRank) break;
        }
        return prefilled;
    };
    for (int r = 0; r <= kIdleRank; ++r)
        if (prefill_pass(r)) break;

    // Everything running is blocked on pages: free the youngest so the rest can move
    // (unless some wait for the disk: their pages come without freeing anyone's).
    if (items.empty() && running_.size() > 1 && loading() == 0) {
        preempt(running_.back(), step);
        return plan_rows(step);
    }
    return items;
}

std::vector<Sequence*> Scheduler::postprocess(const Plan& plan, std::span<const int32_t> sampled,
                                              const std::function<bool(Sequence*)>& finished) {
    if (sampled.size() != plan.items.size())
        throw std::invalid_argument("scheduler: one sampled id (or -1) per step item");
    release_copy_sources();
    for (const StepItem& it : plan.items) {
        if (it.start != it.seq->computed) throw std::logic_error("scheduler: step rows out of order");
        it.seq->computed = it.start + it.count;
        offer_to_cache(it.seq);
    }
    std::vector<Sequence*> retired;
    for (size_t i = 0; i < plan.items.size(); ++i) {
        Sequence* seq = plan.items[i].seq;
        if (!plan.items[i].sample) continue;
        if (seq->prefill_only) {  // its whole prompt is in the KV now
            retired.push_back(seq);
            continue;
        }
        if (sampled[i] < 0) throw std::invalid_argument("scheduler: a sampling row without a sampled id");
        seq->tokens.push_back(sampled[i]);
        if (finished && finished(seq)) retired.push_back(seq);
    }
    for (Sequence* seq : retired) remove(seq);
    return retired;
}

} // namespace arbor::sched
