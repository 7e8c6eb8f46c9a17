// Engine: the loop thread around the scheduler. Per step: take new requests and
// cancellations, schedule, run one forward pass over the batch, sample for the
// sequences whose last row ran (or keep the logits a prefill-only request asked for), and
// let the scheduler's postprocess append the ids and retire the sequences that ended (the
// engine decides which, streaming their text).
#include "arbor/engine.h"

#include "arbor/error.h"
#include "arbor/paths.h"
#include "arbor/sampler.h"
#include "disk_bridge.h"
#include "kv/page_pool.h"
#include "kv/radix_cache.h"
#include "model/reply_stream.h"
#include "model_fingerprint.h"
#include "scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace arbor {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Active {
    sched::Sequence seq;
    GenerateOptions options;
    EventSink sink;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<ReplyStream> reply;
    Clock::time_point submitted, first_token, last_token;
    RequestStats stats;
    bool finished = false;  // its Finished event was sent
    std::string sink_error;  // what the sink threw, when it did (the request then ends)
    // Request::logits: what the Finished event carries, by position from logits_from.
    SequenceRows::Logits logits_wanted = SequenceRows::Logits::None;
    std::vector<float> logits;
    int32_t logits_from = -1;
};

} // namespace

struct Engine::Impl {
    const Model& model;
    EngineOptions options;
    std::string device_fallback;  // why the GPU options.backend.device asked for is not used
    std::unique_ptr<Backend> owned_backend;  // null when the caller lent one
    Backend* backend;
    kv::PageKey fingerprint;  // the model's weights, in the prefix cache and on disk
    kv::PagePool pool;
    kv::RadixCache cache;
    sched::Scheduler scheduler;
    int32_t context;
    std::unique_ptr<sched::DiskBridge> disk;  // null when the disk tier is off
    std::string disk_off_reason;

    std::mutex mutex;
    std::condition_variable wake, idle;
    std::vector<std::unique_ptr<Active>> inbox;
    std::vector<RequestId> cancels;
    bool stop = false, stopped = false, clear_requested = false;
    bool loads_ready = false;       // the disk tier has pages for install_loaded()
    bool waiting_for_disk = false;  // the loop has nothing to do until pages come
    EngineStats snapshot;
    size_t in_flight = 0;  // submitted and not finished (guarded by mutex)
    RequestId next_id = 1;
    uint64_t arrival = 0;

    // Loop thread only.
    std::unordered_map<RequestId, std::unique_ptr<Active>> active;
    uint64_t step = 0;
    std::vector<float> logits;
    std::thread loop;

    Impl(const Model& m, EngineOptions o, std::unique_ptr<Backend> owned, Backend& b, std::string fallback = {})
        : model(m), options(o), device_fallback(std::move(fallback)), owned_backend(std::move(owned)), backend(&b),
          fingerprint(sched::model_fingerprint(m, backend->rope_long_factors())), pool(backend->page_count()), cache(pool, backend->page_size()),
          scheduler(pool, cache,
                    sched::SchedulerOptions{backend->page_size(), o.max_batch_tokens, o.max_running, o.short_queue,
                                            o.max_wait_steps, fingerprint.lo, o.kv_disk_min_pages}),
          context(context_of(m, *backend, o.context_tokens)) {
        cache.set_model_key(fingerprint);
        if (o.kv_disk_bytes > 0) open_disk_tier();
        loop = std::thread([this] { run(); });
    }

    ~Impl() {
        disk.reset();  // its threads end before the cache and backend they use
    }

    // The longest sequence accepted. A LongRoPE model on its short factors is never run
    // past its original context (llama.cpp takes the long ones beyond it); only a backend
    // the caller made with a smaller context_tokens than the engine's can ask for that.
    static int32_t context_of(const Model& m, const Backend& b, int32_t context_tokens) {
        const int32_t limit =
            sequence_limit(int64_t(b.page_count()) * b.page_size(), context_tokens, m.config().n_ctx_train);
        const int32_t original = m.config().rope_long_orig_ctx;
        return original > 0 && !b.rope_long_factors() ? std::min(limit, original) : limit;
    }

    void open_disk_tier() {
        disk_off_reason = backend->page_io_unsupported();
        if (disk_off_reason.empty()) {
            const kv::DiskFormat format{fingerprint, uint32_t(backend->kv_type()), uint32_t(backend->page_size()),
                                        uint64_t(backend->page_bytes())};
            auto store = std::make_unique<kv::DiskStore>(
                options.kv_disk_dir.empty() ? kv_disk_dir() : options.kv_disk_dir, format, options.kv_disk_bytes);
            disk_off_reason = store->disabled_reason();
            if (disk_off_reason.empty())
                disk = std::make_unique<sched::DiskBridge>(*backend, cache, scheduler, std::move(store), [this] {
                    std::lock_guard lock(mutex);
                    loads_ready = true;
                    wake.notify_one();
                });
            return;
        }
        spdlog::warn("KV disk tier off: {}", disk_off_reason);
    }

    // A sink that throws ends its own request (with an error, see advance) and nothing
    // else: the exception never reaches the loop, where it would fail the other requests
    // of the step or, thrown again while they are failed, end the loop thread.
    void emit(Active& a, Event e) {
        e.id = a.seq.id;
        if (!a.sink) return;
        try {
            a.sink(e);
        } catch (const std::exception& ex) {
            if (a.sink_error.empty()) spdlog::error("request {}: its event sink failed: {}", a.seq.id, ex.what());
            a.sink_error = ex.what();
        }
    }

    // Sends the request's one Finished event; called again for a finished request (a step
    // that fails after finishing some of its requests), a no-op. The scheduler retires the
    // sequence separately: in postprocess(), or through end().
    void finish(Active& a, FinishReason reason, std::string error = {}) {
        if (a.finished) return;
        a.finished = true;
        if (reason != FinishReason::Cancelled && reason != FinishReason::Error && a.reply) {
            if (std::string tail = a.reply->flush(); !tail.empty()) {
                Event e;
                e.kind = Event::Kind::Token;
                e.text = std::move(tail);
                e.stats = a.stats;
                emit(a, std::move(e));
            }
        }
        const double decode_ms = ms_between(a.first_token, a.last_token);
        if (a.stats.generated_tokens > 1 && decode_ms > 0)
            a.stats.decode_tokens_per_second = (a.stats.generated_tokens - 1) / (decode_ms / 1000.0);
        Event e;
        e.kind = Event::Kind::Finished;
        e.finish = reason;
        e.error = std::move(error);
        e.stats = a.stats;
        if (reason != FinishReason::Cancelled && reason != FinishReason::Error) e.logits = std::move(a.logits);
        emit(a, std::move(e));
    }

    // Ends a request outside a step's postprocess (cancelled, failed, never fitting): its
    // sequence leaves the scheduler, then its Finished event goes out.
    void end(RequestId id, FinishReason reason, std::string error = {}) {
        Active& a = *active.at(id);
        scheduler.remove(&a.seq);
        finish(a, reason, std::move(error));
        retire(id);
    }

    void retire(RequestId id) {
        active.erase(id);
        std::lock_guard lock(mutex);
        update_snapshot();  // so that whoever wakes from wait_idle() sees the final state
        --in_flight;
        if (in_flight == 0) idle.notify_all();
    }

    void accept_new(std::vector<std::unique_ptr<Active>>& incoming) {
        for (auto& a : incoming) {
            const RequestId id = a->seq.id;
            std::string problem;
            if (a->seq.tokens.empty()) problem = "the prompt is empty";
            else if (!a->seq.prefill_only && a->logits_wanted != SequenceRows::Logits::None)
                problem = "only a prefill-only request returns logits";
            else if (!a->seq.prefill_only && a->options.max_tokens < 1)
                problem = "max_tokens is " + std::to_string(a->options.max_tokens) + "; a reply needs at least 1";
            else if (int32_t(a->seq.tokens.size()) >= context)
                problem = "the prompt has " + std::to_string(a->seq.tokens.size()) +
                          " tokens; the context holds " + std::to_string(context);
            else
                for (TokenId t : a->seq.tokens)
                    if (t < 0 || t >= model.config().n_vocab) problem = "token id " + std::to_string(t) + " is out of range";
            if (problem.empty()) {
                try {
                    a->sampler = std::make_unique<Sampler>(a->options.sampler, model.config().n_vocab);
                    for (TokenId t : a->seq.tokens) a->sampler->accept(t);
                } catch (const Error& e) {
                    problem = e.what();
                }
            }
            Active& ref = *a;
            active.emplace(id, std::move(a));
            if (!problem.empty()) {
                finish(ref, FinishReason::Error, problem);
                retire(id);
                continue;
            }
            ref.reply = std::make_unique<ReplyStream>(model.tokenizer(), ref.options);
            scheduler.enqueue(&ref.seq, step);
        }
    }

    static bool prefill_only(const sched::Sequence& seq) { return seq.prefill_only; }

    // The logits the forward pass returns for a step item: the sampled row of a reply, the
    // rows a prefill-only request asked for (Request::logits), or none.
    SequenceRows::Logits logits_for(const sched::StepItem& it) const {
        using L = SequenceRows::Logits;
        if (!prefill_only(*it.seq)) return it.sample ? L::Last : L::None;
        const L wanted = active.at(it.seq->id)->logits_wanted;
        return wanted == L::All || (wanted == L::Last && it.sample) ? wanted : L::None;
    }

    // Keeps a prefill-only request's logits for its Finished event, by position: rows
    // computed again after a preemption replace the earlier ones.
    void keep_logits(Active& a, const sched::StepItem& it, const float* rows, SequenceRows::Logits which) {
        const size_t V = size_t(model.config().n_vocab);
        if (which == SequenceRows::Logits::Last) {
            a.logits.assign(rows, rows + V);
            return;
        }
        if (a.logits_from < 0) a.logits_from = it.start;
        const int32_t skip = std::max(0, a.logits_from - it.start);
        if (skip >= it.count) return;
        const size_t at = size_t(it.start + skip - a.logits_from) * V;
        a.logits.resize(std::max(a.logits.size(), at + size_t(it.count - skip) * V));
        std::copy(rows + size_t(skip) * V, rows + size_t(it.count) * V, a.logits.begin() + ptrdiff_t(at));
    }

    // The next id of a sequence whose last known token just ran.
    TokenId sample(Active& a, const float* row) {
        const TokenId id = a.sampler->sample(std::span(row, size_t(model.config().n_vocab)));
        a.sampler->accept(id);
        return id;
    }

    // Streams the id postprocess() just appended to the sequence; returns true when the
    // request ended with it (its Finished event sent).
    bool stream(Active& a) {
        const TokenId id = a.seq.tokens.back();
        const auto now = Clock::now();
        if (a.stats.generated_tokens == 0) {
            a.first_token = now;
            a.stats.time_to_first_token_ms = ms_between(a.submitted, now);
            a.stats.cached_tokens = std::max(0, a.seq.cached_prompt_tokens);
            a.stats.disk_tokens = a.seq.disk_prompt_tokens;
        }
        a.last_token = now;
        ++a.stats.generated_tokens;
        auto step_out = a.reply->push(id);
        Event e;
        e.kind = Event::Kind::Token;
        e.token = id;
        e.text = std::move(step_out.text);
        e.stats = a.stats;
        emit(a, std::move(e));
        if (!a.sink_error.empty()) {
            finish(a, FinishReason::Error, "the request's event sink failed: " + a.sink_error);
            return true;
        }
        if (step_out.finish) {
            finish(a, *step_out.finish);
            return true;
        }
        if (int32_t(a.seq.tokens.size()) >= context) {
            finish(a, FinishReason::ContextFull);
            return true;
        }
        return false;
    }

    // After a chunk of a prompt that is not its last: how much of the prompt is computed.
    // Not for warm-ups (nobody waits on them) nor for a preempted request computing its
    // tokens again (it has shown its progress already).
    void report_prefill(Active& a, const sched::StepItem& it) {
        if (prefill_only(a.seq) || a.stats.generated_tokens > 0) return;
        Event e;
        e.kind = Event::Kind::Progress;
        e.prefilled = std::min(it.start + it.count, a.seq.prompt_len);
        e.stats = a.stats;
        emit(a, std::move(e));
    }

    void run_step(const sched::Plan& plan) {
        // The scheduler holds each copy's source page until postprocess().
        for (const auto& copy : plan.copies) backend->copy_page_prefix(copy.src, copy.dst, copy.positions);
        const auto& items = plan.items;
        std::vector<int32_t> sampled(items.size(), -1);
        if (!items.empty()) {
            ForwardBatch batch;
            for (const auto& it : items) {
                SequenceRows rows;
                rows.first_row = int32_t(batch.tokens.size());
                rows.n_rows = it.count;
                rows.start_pos = it.start;
                rows.block_table = it.seq->table.pages;
                rows.logits = logits_for(it);
                batch.tokens.insert(batch.tokens.end(), it.seq->tokens.begin() + it.start,
                                    it.seq->tokens.begin() + it.start + it.count);
                batch.sequences.push_back(rows);
            }
            backend->forward(batch, logits);
            // The logits come in item order: one row for Last, the item's rows for All.
            const size_t V = size_t(model.config().n_vocab);
            size_t row = 0;
            for (size_t i = 0; i < items.size(); ++i) {
                const SequenceRows::Logits which = batch.sequences[i].logits;
                if (which == SequenceRows::Logits::None) continue;
                Active& a = *active.at(items[i].seq->id);
                if (prefill_only(a.seq)) keep_logits(a, items[i], logits.data() + row * V, which);
                else sampled[i] = sample(a, logits.data() + row * V);
                row += which == SequenceRows::Logits::All ? size_t(items[i].count) : 1;
            }
        }
        const auto retired =
            scheduler.postprocess(plan, sampled, [&](sched::Sequence* seq) { return stream(*active.at(seq->id)); });
        for (const auto& it : items)
            if (!it.sample) report_prefill(*active.at(it.seq->id), it);
        for (sched::Sequence* seq : retired) {
            Active& a = *active.at(seq->id);
            if (prefill_only(a.seq)) {
                // The whole prompt is in the KV now; retiring offered it to the cache.
                a.stats.cached_tokens = std::max(0, a.seq.cached_prompt_tokens);
                a.stats.disk_tokens = a.seq.disk_prompt_tokens;
                finish(a, FinishReason::Length);
            }
            retire(seq->id);
        }
    }

    void publish_stats() {
        std::lock_guard lock(mutex);
        update_snapshot();
    }

    // Caller holds mutex.
    void update_snapshot() {
        snapshot.pages_total = pool.capacity();
        snapshot.page_bytes = backend->page_bytes();
        snapshot.pages_used = pool.used_count();
        snapshot.pages_cached = cache.cached_pages();
        snapshot.running = scheduler.running();
        snapshot.waiting = scheduler.waiting();
        snapshot.steps = step;
        snapshot.preemptions = scheduler.preemptions();
        if (disk) {
            kv::DiskStore& store = disk->tier().store();
            const auto counters = store.counters();
            snapshot.disk_pages = store.pages();
            snapshot.disk_bytes = store.bytes_used();
            snapshot.disk_written = counters.written;
            snapshot.disk_read = counters.read;
            snapshot.disk_rejected = counters.rejected;
            snapshot.disk_dropped = disk->tier().counters().spills_dropped;
        }
    }

    void run() {
        for (;;) {
            std::vector<std::unique_ptr<Active>> incoming;
            std::vector<RequestId> to_cancel;
            bool clear = false, stopping = false;
            {
                std::unique_lock lock(mutex);
                wake.wait(lock, [&] {
                    return stop || !inbox.empty() || !cancels.empty() || clear_requested || loads_ready ||
                           (!active.empty() && !waiting_for_disk);
                });
                waiting_for_disk = false;
                loads_ready = false;
                incoming.swap(inbox);
                to_cancel.swap(cancels);
                std::swap(clear, clear_requested);
                stopping = stop;
            }
            accept_new(incoming);
            if (stopping) {
                while (!active.empty()) end(active.begin()->first, FinishReason::Cancelled);
                if (disk) disk->flush();  // every cached page outlives the process
                cache.clear();
                publish_stats();
                return;
            }
            for (RequestId id : to_cancel) {
                if (active.count(id)) end(id, FinishReason::Cancelled);
            }
            if (clear) cache.evict(cache.cached_pages());
            if (disk) disk->install_loaded();
            if (!active.empty()) {
                const auto plan = scheduler.schedule(step);
                if (!plan.items.empty() || !plan.copies.empty()) {
                    try {
                        run_step(plan);
                    } catch (const std::exception& e) {
                        spdlog::error("engine step failed: {}", e.what());
                        std::vector<RequestId> failed;
                        for (const auto& it : plan.items) failed.push_back(it.seq->id);
                        for (RequestId id : failed)
                            if (active.count(id)) end(id, FinishReason::Error, e.what());
                    }
                    ++step;
                } else if (scheduler.loading() > 0) {
                    std::lock_guard lock(mutex);
                    waiting_for_disk = true;  // until the loader has pages (or a request comes)
                } else if (scheduler.running() == 0 && scheduler.waiting() > 0) {
                    // Nothing can be admitted into an otherwise idle pool: the head request
                    // can never run.
                    end(scheduler.waiting_queue().front()->id, FinishReason::Error,
                        "the request does not fit in the KV memory");
                }
            }
            publish_stats();
        }
    }
};

Engine::Engine(const Model& model, EngineOptions options) {
    options.backend.context_tokens = options.context_tokens;  // one context for both (LongRoPE's choice)
    std::string fallback;
    auto backend = make_backend(model, options.backend, &fallback);
    Backend& b = *backend;
    impl_ = std::make_unique<Impl>(model, options, std::move(backend), b, std::move(fallback));
}

Engine::Engine(const Model& model, Backend& backend, EngineOptions options)
    : impl_(std::make_unique<Impl>(model, options, nullptr, backend)) {}

Engine::~Engine() { shutdown(); }

RequestId Engine::submit(Request request, EventSink sink) {
    auto a = std::make_unique<Active>();
    a->seq.tokens = std::move(request.prompt);
    a->seq.prompt_len = int32_t(a->seq.tokens.size());
    a->seq.cache_namespace = request.cache_namespace;
    a->seq.prefill_only = request.kind == RequestKind::PrefillOnly;
    a->seq.priority = a->seq.prefill_only ? std::max(request.priority, Priority::Background) : request.priority;
    a->logits_wanted = request.logits;
    a->options = std::move(request.options);
    a->sink = std::move(sink);
    a->submitted = Clock::now();
    a->stats.prompt_tokens = a->seq.prompt_len;
    RequestId id = 0;
    {
        std::lock_guard lock(impl_->mutex);
        id = impl_->next_id++;
        a->seq.id = id;
        a->seq.arrival = impl_->arrival++;
        if (!impl_->stopped) {
            ++impl_->in_flight;
            impl_->inbox.push_back(std::move(a));
            impl_->wake.notify_one();
            return id;
        }
    }
    // After shutdown: the request ends at once (outside the lock: the sink may call back).
    Event e;
    e.kind = Event::Kind::Finished;
    e.id = id;
    e.finish = FinishReason::Cancelled;
    e.stats = a->stats;
    if (a->sink) a->sink(e);
    return id;
}

void Engine::cancel(RequestId id) {
    std::lock_guard lock(impl_->mutex);
    impl_->cancels.push_back(id);
    impl_->wake.notify_one();
}

void Engine::shutdown() {
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->stopped) return;
        impl_->stop = true;
        impl_->stopped = true;
        impl_->wake.notify_one();
    }
    if (impl_->loop.joinable()) impl_->loop.join();
}

EngineStats Engine::stats() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->snapshot;
}

void Engine::clear_cache() {
    std::lock_guard lock(impl_->mutex);
    impl_->clear_requested = true;
    impl_->wake.notify_one();
}

void Engine::wait_idle() {
    std::unique_lock lock(impl_->mutex);
    impl_->idle.wait(lock, [&] { return impl_->in_flight == 0; });
}

const Model& Engine::model() const { return impl_->model; }

int32_t Engine::context_size() const { return impl_->context; }

std::string Engine::device() const { return impl_->backend->description(); }

KvType Engine::kv_type() const { return impl_->backend->kv_type(); }

const std::string& Engine::device_fallback() const { return impl_->device_fallback; }

std::string Engine::disk_tier_off_reason() const {
    if (impl_->disk) return impl_->disk->tier().store().disabled_reason();
    return impl_->disk_off_reason;
}

} // namespace arbor
