// The scheduler as pure bookkeeping, without a model: a randomized simulation of
// arrivals, steps, generated tokens, finishes and cancellations over shared prefixes,
// checking after every step the token budget, row order, page coverage, copy plans, the
// pool and cache invariants, waiting time, and that the pool is whole at the end; and the
// admission order and background warm-ups step by step.
#include "sched/scheduler.h"

#include "kv/block_table.h"
#include "kv/page_pool.h"
#include "kv/radix_cache.h"

#include <QtTest>

#include <algorithm>
#include <memory>
#include <random>
#include <set>

using arbor::sched::Scheduler;
using arbor::sched::SchedulerOptions;
using arbor::sched::Sequence;

namespace {

// The ids a step samples: `token` for every item whose last row is its sequence's last
// known token (prefill-only ones included: postprocess ignores theirs), -1 elsewhere.
std::vector<int32_t> sampled_ids(const arbor::sched::Plan& plan, int32_t token) {
    std::vector<int32_t> ids;
    for (const auto& it : plan.items) ids.push_back(it.sample ? token : -1);
    return ids;
}

// Completes a step whose replies all go on (none ends), appending `token` to each.
std::vector<Sequence*> step_done(Scheduler& sched, const arbor::sched::Plan& plan, int32_t token = 7) {
    return sched.postprocess(plan, sampled_ids(plan, token), [](Sequence*) { return false; });
}

// A sequence of `length` distinct prompt tokens, kept in `all`; anything but Normal is a
// warm-up (prefill only).
Sequence* make_prompt(std::vector<std::unique_ptr<Sequence>>& all, arbor::Priority priority, int length) {
    auto s = std::make_unique<Sequence>();
    s->id = s->arrival = all.size() + 1;
    for (int i = 0; i < length; ++i) s->tokens.push_back(int32_t(1000 * s->id + uint64_t(i)));
    s->prompt_len = length;
    s->priority = priority;
    s->prefill_only = priority != arbor::Priority::Normal;
    all.push_back(std::move(s));
    return all.back().get();
}

// The rows a step gives `seq`.
int rows_of(const arbor::sched::Plan& plan, const Sequence* seq) {
    int rows = 0;
    for (const auto& it : plan.items) rows += it.seq == seq ? it.count : 0;
    return rows;
}

struct Sim {
    std::unique_ptr<Sequence> seq;
    int target = 0;     // tokens to generate
    int generated = 0;
    uint64_t arrived_step = 0;
};

} // namespace

class TestScheduler : public QObject {
    Q_OBJECT
private slots:
    void randomizedTrafficKeepsEveryInvariant_data() {
        QTest::addColumn<int>("pages");
        QTest::addColumn<int>("budget");
        QTest::addColumn<int>("running");
        QTest::newRow("roomy") << 256 << 32 << 8;
        QTest::newRow("tight pool") << 24 << 16 << 6;
        QTest::newRow("one at a time") << 64 << 8 << 1;
    }
    void randomizedTrafficKeepsEveryInvariant() {
        QFETCH(int, pages);
        QFETCH(int, budget);
        QFETCH(int, running);
        constexpr int P = 4;
        arbor::kv::PagePool pool(pages);
        arbor::kv::RadixCache cache(pool, P);
        Scheduler sched(pool, cache, SchedulerOptions{P, budget, running, 3, 20, 7});
        std::mt19937 rng(2024);
        const std::vector<std::vector<int32_t>> prefixes = {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 50, 51}, {90}};

        std::vector<Sim> live;
        uint64_t next_id = 1;
        int finished = 0, cancelled = 0, preemptions = 0;
        uint64_t longest_wait = 0;
        const int total = 400;
        int created = 0;
        for (uint64_t step = 0; step < 200000 && (created < total || !live.empty()); ++step) {
            // Arrivals: shared prefix plus a random suffix; pool-sized prompts only.
            while (created < total && rng() % 3 == 0) {
                Sim s;
                s.seq = std::make_unique<Sequence>();
                s.seq->id = next_id;
                s.seq->arrival = next_id++;
                s.seq->tokens = prefixes[rng() % prefixes.size()];
                const int extra = int(rng() % 30);
                for (int i = 0; i < extra; ++i) s.seq->tokens.push_back(int32_t(100 + rng() % 5));
                s.seq->prompt_len = int32_t(s.seq->tokens.size());
                s.seq->prefill_only = rng() % 5 == 0;  // warm-ups
                if (s.seq->prefill_only)
                    s.seq->priority = rng() % 2 ? arbor::Priority::Background : arbor::Priority::Idle;
                s.target = s.seq->prefill_only ? 0 : 1 + int(rng() % 12);
                s.arrived_step = step;
                sched.enqueue(s.seq.get(), step);
                live.push_back(std::move(s));
                ++created;
            }
            // Occasional cancellation, queued or running.
            if (!live.empty() && rng() % 17 == 0) {
                const size_t k = rng() % live.size();
                sched.remove(live[k].seq.get());
                live.erase(live.begin() + std::ptrdiff_t(k));
                ++cancelled;
            }

            const auto plan = sched.schedule(step);
            int rows = 0;
            for (const auto& it : plan.items) {
                rows += it.count;
                QVERIFY(it.count > 0);
                QCOMPARE(it.start, it.seq->computed);
                QVERIFY(it.start + it.count <= int32_t(it.seq->tokens.size()));
                QVERIFY(int32_t(it.seq->table.pages.size()) * P >= it.start + it.count);
                QCOMPARE(it.sample, it.start + it.count == int32_t(it.seq->tokens.size()));
                QVERIFY(it.seq->running);
            }
            QVERIFY2(rows <= budget, "step exceeds the token budget");
            QVERIFY(sched.running() <= running);
            // The scheduler holds each copy's source until postprocess and releases it
            // then (the pool is whole at the end only if it does).
            for (const auto& c : plan.copies) {
                QVERIFY(pool.refcount(c.src) >= 1);
                QVERIFY(c.positions > 0 && c.positions < P);
            }
            auto sim_of = [&](const Sequence* seq) {
                return std::find_if(live.begin(), live.end(), [&](const Sim& s) { return s.seq.get() == seq; });
            };
            std::vector<int32_t> sampled;
            for (const auto& it : plan.items)
                sampled.push_back(it.sample ? int32_t(200 + (it.seq->id + uint64_t(sim_of(it.seq)->generated)) % 7) : -1);
            const auto retired = sched.postprocess(plan, sampled, [&](Sequence* seq) {
                const auto found = sim_of(seq);
                return found != live.end() && ++found->generated >= found->target;
            });
            for (Sequence* seq : retired) {
                auto found = sim_of(seq);
                QVERIFY(found != live.end());
                QVERIFY2(!seq->running && seq->table.pages.empty(), "a retired sequence still holds pages");
                QVERIFY(seq->prefill_only || found->generated >= found->target);
                preemptions += found->seq->preemptions;
                longest_wait = std::max(longest_wait, step - found->arrived_step);
                live.erase(found);
                ++finished;
            }
            // Pages held beyond what a sequence has computed: at most one.
            for (const auto& s : live)
                QVERIFY(int32_t(s.seq->table.pages.size()) <=
                        arbor::kv::BlockTable::pages_for(s.seq->computed, P) + 1);
            pool.check_invariants();
            cache.check_invariants();
        }
        QVERIFY2(live.empty(), "some requests never finished");
        QCOMPARE(finished + cancelled, total);
        QVERIFY(finished > total / 2);
        qInfo("finished %d, cancelled %d, preemptions %d, longest time in system %llu steps", finished, cancelled,
              preemptions, static_cast<unsigned long long>(longest_wait));
        if (pages < 64) QVERIFY2(preemptions > 0, "the tight pool should force preemption");
        QVERIFY2(longest_wait < 5000, "a request waited far too long");
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }

    // With room for one running sequence, the order of admission shows: the longest cached
    // prefix first while at most short_queue wait, arrival order beyond that, and a request
    // that waited max_wait_steps before any other either way.
    void admissionOrderFavoursCachedPrefixesWhileTheQueueIsShort() {
        constexpr int P = 4, kShortQueue = 3, kMaxWait = 5;
        arbor::kv::PagePool pool(64);
        arbor::kv::RadixCache cache(pool, P);
        Scheduler sched(pool, cache, SchedulerOptions{P, 64, 1, kShortQueue, kMaxWait, 7});
        std::vector<std::unique_ptr<Sequence>> all;
        // Prompts of ten tokens, their last ones unique to `id`: `cached` ones open with the
        // eight the cache holds.
        auto prompt = [](uint64_t id, bool cached) {
            std::vector<int32_t> tokens;
            for (int i = 0; i < 10; ++i) tokens.push_back(cached && i < 8 ? i + 1 : int32_t(100 * id) + i);
            return tokens;
        };
        auto make = [&](bool cached) {
            auto s = std::make_unique<Sequence>();
            s->id = s->arrival = all.size() + 1;
            s->tokens = prompt(s->id, cached);
            s->prompt_len = 10;
            all.push_back(std::move(s));
            return all.back().get();
        };
        auto admitted_first = [&](uint64_t step) {
            const auto plan = sched.schedule(step);
            if (plan.items.size() != 1) return static_cast<Sequence*>(nullptr);
            Sequence* seq = plan.items[0].seq;
            step_done(sched, plan);
            sched.remove(seq);
            return seq;
        };
        // Puts the eight tokens in the cache (two full pages).
        Sequence* seed = make(true);
        sched.enqueue(seed, 0);
        QCOMPARE(admitted_first(0), seed);
        QCOMPARE(sched.cached_prefix(prompt(99, true)), 8);

        // A short queue: the cached prompt overtakes an older one without a hit.
        Sequence* plain = make(false);
        Sequence* hit = make(true);
        sched.enqueue(plain, 1);
        sched.enqueue(hit, 1);
        QCOMPARE(admitted_first(1), hit);
        QCOMPARE(admitted_first(2), plain);

        // More than short_queue waiting: first come, first served, until the queue is short.
        std::vector<Sequence*> queue = {make(false), make(false), make(false), make(false), make(true)};
        for (Sequence* s : queue) sched.enqueue(s, 3);
        for (Sequence* s : {queue[0], queue[1], queue[4], queue[2], queue[3]}) QCOMPARE(admitted_first(4), s);

        // Overdue: a request that waited max_wait_steps goes before a cached prompt.
        Sequence* old = make(false);
        sched.enqueue(old, 10);
        Sequence* fresh = make(true);
        sched.enqueue(fresh, 10 + kMaxWait);
        QCOMPARE(admitted_first(10 + kMaxWait), old);
        QCOMPARE(admitted_first(11 + kMaxWait), fresh);

        QCOMPARE(sched.waiting() + sched.running(), 0);
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }

    // A warm-up (background) gets no prefill rows in a step where a foreground request
    // prefills; it runs in the next step with only decode rows, or once it has waited
    // max_wait_steps even under constant foreground prefill.
    void backgroundPrefillYieldsToForeground() {
        constexpr int P = 4, kMaxWait = 5;
        arbor::kv::PagePool pool(64);
        arbor::kv::RadixCache cache(pool, P);
        Scheduler sched(pool, cache, SchedulerOptions{P, 64, 8, 3, kMaxWait, 7});
        auto make = [](uint64_t id, bool background, int length) {
            auto s = std::make_unique<Sequence>();
            s->id = s->arrival = id;
            for (int i = 0; i < length; ++i) s->tokens.push_back(int32_t(10 * id + uint64_t(i)));
            s->prompt_len = length;
            s->prefill_only = background;
            s->priority = background ? arbor::Priority::Background : arbor::Priority::Normal;
            return s;
        };
        auto warm = make(1, true, 6), chat = make(2, false, 9);
        sched.enqueue(warm.get(), 0);  // the warm-up arrived first
        sched.enqueue(chat.get(), 0);
        auto plan = sched.schedule(0);
        QCOMPARE(rows_of(plan, chat.get()), 9);
        QCOMPARE(rows_of(plan, warm.get()), 0);
        step_done(sched, plan, 500);  // the chat's first token; from now on it only decodes
        plan = sched.schedule(1);
        QCOMPARE(rows_of(plan, chat.get()), 1);
        QCOMPARE(rows_of(plan, warm.get()), 6);
        // The warm-up's prompt is computed: postprocess retires it by itself.
        const auto retired = step_done(sched, plan);
        QCOMPARE(retired.size(), size_t(1));
        QCOMPARE(retired[0], warm.get());
        sched.remove(chat.get());

        // Under constant foreground prefill the warm-up waits max_wait_steps, no longer.
        auto late = make(3, true, 5);
        sched.enqueue(late.get(), 10);
        std::vector<std::unique_ptr<Sequence>> chats;
        uint64_t step = 10;
        for (; step < 10 + 2 * kMaxWait; ++step) {
            chats.push_back(make(100 + step, false, 3));
            sched.enqueue(chats.back().get(), step);
            plan = sched.schedule(step);
            sched.postprocess(plan, sampled_ids(plan, 7), [](Sequence*) { return true; });  // one-token replies
            if (rows_of(plan, late.get()) > 0) break;
        }
        QCOMPARE(step, uint64_t(10 + kMaxWait));
        sched.remove(late.get());
        for (auto& c : chats) sched.remove(c.get());
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }
    // Beside a reply being decoded, a Background warm-up adds at most
    // lower_rows_beside_decode prompt rows per step, so the reply keeps its pace, and an Idle
    // one (a restored tab) adds none; alone, each takes the whole step until its prompt is
    // computed. A Background one that waited max_wait_steps ranks as Normal and takes the
    // whole step again.
    void warmUpsAddFewRowsBesideADecode() {
        constexpr int P = 4, kMaxWait = 1000;
        arbor::kv::PagePool pool(256);
        arbor::kv::RadixCache cache(pool, P);
        SchedulerOptions options{P, 128, 8, 3, kMaxWait, 7};
        options.lower_rows_beside_decode = 8;
        Scheduler sched(pool, cache, options);
        std::vector<std::unique_ptr<Sequence>> all;
        auto make = [&](arbor::Priority priority, int length) { return make_prompt(all, priority, length); };
        for (const arbor::Priority warm_priority : {arbor::Priority::Background, arbor::Priority::Idle}) {
            const int beside = warm_priority == arbor::Priority::Idle ? 0 : 8;
            Sequence* chat = make(arbor::Priority::Normal, 10);
            sched.enqueue(chat, 0);
            step_done(sched, sched.schedule(0));  // the chat's prompt and first token
            Sequence* warm = make(warm_priority, 400);
            sched.enqueue(warm, 1);
            int computed = 0;
            for (uint64_t step = 1; step <= 5; ++step) {
                const auto plan = sched.schedule(step);
                QCOMPARE(rows_of(plan, chat), 1);
                QCOMPARE(rows_of(plan, warm), beside);
                computed += beside;
                step_done(sched, plan);
            }
            QCOMPARE(warm->computed, computed);
            sched.remove(chat);
            // Alone, whole steps of it until its prompt is computed.
            std::vector<Sequence*> retired;
            for (uint64_t step = 6; retired.empty(); ++step) {
                QVERIFY2(step < 20, "the warm-up did not finish once the decode ended");
                const auto plan = sched.schedule(step);
                QCOMPARE(rows_of(plan, warm), std::min(128, 400 - computed));
                computed += rows_of(plan, warm);
                retired = step_done(sched, plan);
            }
            QVERIFY(retired == std::vector<Sequence*>{warm});
            QCOMPARE(computed, 400);
            sched.remove(warm);
        }
        {
            // An Idle warm-up already running when a reply starts to decode stops for it and
            // goes on where it was once the reply ends.
            Sequence* idle = make(arbor::Priority::Idle, 400);
            sched.enqueue(idle, 30);
            auto plan = sched.schedule(30);
            QCOMPARE(rows_of(plan, idle), 128);
            step_done(sched, plan);
            Sequence* chat = make(arbor::Priority::Normal, 10);
            sched.enqueue(chat, 31);
            plan = sched.schedule(31);  // the chat's prompt: no lower rank prefills
            QCOMPARE(rows_of(plan, idle), 0);
            step_done(sched, plan);
            for (uint64_t step = 32; step <= 36; ++step) {
                plan = sched.schedule(step);
                QCOMPARE(rows_of(plan, chat), 1);
                QCOMPARE(rows_of(plan, idle), 0);
                step_done(sched, plan);
            }
            sched.remove(chat);
            plan = sched.schedule(37);
            QCOMPARE(rows_of(plan, idle), 128);
            QCOMPARE(plan.items[0].start, 128);
            step_done(sched, plan);
            sched.remove(idle);
        }
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }

    // Idle warm-ups (restored tabs): one runs at a time; it computes rows only in steps
    // where no Normal or Background request computes a prompt, however long it waits; a
    // Normal request arriving while it runs is admitted at once, taking its running slot
    // or its pages (the Idle one is preempted, what it computed left in the cache).
    void idleWarmUpsGiveWayToEveryone() {
        constexpr int P = 4, kMaxWait = 3;
        std::vector<std::unique_ptr<Sequence>> all;
        auto make = [&](arbor::Priority priority, int length) { return make_prompt(all, priority, length); };
        std::set<const Sequence*> done;  // warm-ups retired with their prompt computed
        auto step_once = [&](Scheduler& sched, uint64_t step) {
            auto plan = sched.schedule(step);
            for (Sequence* seq : step_done(sched, plan)) done.insert(seq);  // replies decode on
            return plan;
        };
        {
            arbor::kv::PagePool pool(128);
            arbor::kv::RadixCache cache(pool, P);
            Scheduler sched(pool, cache, SchedulerOptions{P, 32, 8, 3, kMaxWait, 7});
            Sequence* first = make(arbor::Priority::Idle, 64);
            Sequence* second = make(arbor::Priority::Idle, 64);
            sched.enqueue(first, 0);
            sched.enqueue(second, 0);
            auto plan = step_once(sched, 0);
            QCOMPARE(rows_of(plan, first), 32);
            QVERIFY2(!second->running, "a second Idle sequence was admitted beside the first");
            // Chats keep arriving for longer than max_wait_steps: the Idle ones get no rows
            // in any step where a chat prefills (a Background one would after kMaxWait).
            Sequence* warm = make(arbor::Priority::Background, 8);
            sched.enqueue(warm, 1);
            for (uint64_t step = 1; step <= 4 * kMaxWait; ++step) {
                Sequence* chat = make(arbor::Priority::Normal, 12);
                sched.enqueue(chat, step);
                plan = step_once(sched, step);
                QCOMPARE(rows_of(plan, chat), 12);
                QCOMPARE(rows_of(plan, first), 0);
                QVERIFY(!second->running);
                sched.remove(chat);
            }
            QVERIFY2(done.count(warm), "the Background warm-up never ran");
            // Alone again, the Idle ones finish one after the other.
            uint64_t step = 100;
            while (!done.count(first)) {
                QVERIFY(step < 200);
                plan = step_once(sched, step++);
                QCOMPARE(rows_of(plan, second), 0);
            }
            plan = step_once(sched, step);
            QCOMPARE(rows_of(plan, second), 32);
            sched.remove(second);
            cache.clear();
            QCOMPARE(pool.free_count(), pool.capacity());
        }
        {
            // Room for one running sequence and 20 pages: the chat takes both from the
            // Idle warm-up, whose computed pages stay in the cache for its next turn.
            arbor::kv::PagePool pool(20);
            arbor::kv::RadixCache cache(pool, P);
            Scheduler sched(pool, cache, SchedulerOptions{P, 32, 1, 3, kMaxWait, 7});
            Sequence* idle = make(arbor::Priority::Idle, 72);
            sched.enqueue(idle, 0);
            QCOMPARE(rows_of(step_once(sched, 0), idle), 32);
            Sequence* chat = make(arbor::Priority::Normal, 40);
            sched.enqueue(chat, 1);
            auto plan = step_once(sched, 1);
            QCOMPARE(rows_of(plan, chat), 32);
            QVERIFY(!idle->running);
            QCOMPARE(idle->preemptions, 1);
            QCOMPARE(sched.cached_prefix(idle->tokens), 32);
            while (chat->pending() > 1) step_once(sched, 2);
            sched.remove(chat);
            // Back in, it continues from the cache.
            plan = step_once(sched, 3);
            QCOMPARE(plan.items.size(), size_t(1));
            QCOMPARE(plan.items[0].seq, idle);
            QCOMPARE(plan.items[0].start, 32);
            sched.remove(idle);
            cache.clear();
            QCOMPARE(pool.free_count(), pool.capacity());
        }
    }

    // Ranking the waiting queue by cached prefix only reads the cache: the prompt it looks
    // up every step is not marked used, so eviction still takes the least recently used
    // entry (once the lookup refreshed it, the other prompt's tail went instead).
    void queueOrderingLeavesTheCacheAlone() {
        constexpr int P = 4;
        arbor::kv::PagePool pool(64);
        arbor::kv::RadixCache cache(pool, P);
        Scheduler sched(pool, cache, SchedulerOptions{P, 64, 1, 3, 20, 7});
        std::vector<std::unique_ptr<Sequence>> all;
        auto make = [&](std::vector<int32_t> tokens) {
            auto s = std::make_unique<Sequence>();
            s->id = s->arrival = all.size() + 1;
            s->tokens = std::move(tokens);
            s->prompt_len = int32_t(s->tokens.size());
            all.push_back(std::move(s));
            return all.back().get();
        };
        const std::vector<int32_t> older = {1, 2, 3, 4, 5, 6, 7, 8, 9}, newer = {21, 22, 23, 24, 25, 26, 27, 28, 29};
        uint64_t step = 0;
        for (const auto& prompt : {older, newer}) {  // two pages and a one-token tail each
            Sequence* seq = make(prompt);
            sched.enqueue(seq, step);
            step_done(sched, sched.schedule(step++));
            sched.remove(seq);
        }
        auto probe = [](std::vector<int32_t> prompt) {
            prompt.push_back(0);
            return prompt;
        };
        QCOMPARE(sched.cached_prefix(probe(older)), 9);
        QCOMPARE(sched.cached_prefix(probe(newer)), 9);

        // One running slot, taken; two wait, one of them continuing the older prompt.
        Sequence* running = make({50, 51, 52, 53, 54, 55});
        sched.enqueue(running, step);
        step_done(sched, sched.schedule(step++));
        Sequence* continuing = make(probe(older));
        Sequence* other = make({70, 71});
        sched.enqueue(continuing, step);
        sched.enqueue(other, step);
        for (int i = 0; i < 3; ++i) {
            const auto plan = sched.schedule(step++);
            QCOMPARE(plan.items.size(), size_t(1));
            QCOMPARE(plan.items[0].seq, running);
            step_done(sched, plan);
        }
        QVERIFY(!continuing->running && !other->running);

        QCOMPARE(cache.evict(1), 1);
        QCOMPARE(sched.cached_prefix(probe(older)), 8);  // its tail was the oldest entry
        QCOMPARE(sched.cached_prefix(probe(newer)), 9);
        for (Sequence* seq : {running, continuing, other}) sched.remove(seq);
        cache.check_invariants();
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }

    // Sequences of different cache namespaces never share pages: a prompt cached in one
    // namespace is a miss in another (no whole pages, no copied head, no admission
    // preference), and still a hit in its own.
    void namespacesNeverShareCachedPages() {
        constexpr int P = 4;
        constexpr uint64_t kAlice = 11, kBob = 12;
        arbor::kv::PagePool pool(64);
        arbor::kv::RadixCache cache(pool, P);
        Scheduler sched(pool, cache, SchedulerOptions{P, 64, 1, 3, 20, 7});
        const std::vector<int32_t> secret = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        std::vector<std::unique_ptr<Sequence>> all;
        auto make = [&](uint64_t ns, std::vector<int32_t> tokens) {
            auto s = std::make_unique<Sequence>();
            s->id = s->arrival = all.size() + 1;
            s->tokens = std::move(tokens);
            s->prompt_len = int32_t(s->tokens.size());
            s->cache_namespace = ns;
            all.push_back(std::move(s));
            return all.back().get();
        };
        // Runs the only admitted sequence's prompt and removes it (offering it to the cache).
        auto run_first = [&](uint64_t step, arbor::sched::Plan* seen = nullptr) {
            auto plan = sched.schedule(step);
            if (plan.items.size() != 1) return static_cast<Sequence*>(nullptr);
            Sequence* seq = plan.items[0].seq;
            step_done(sched, plan);
            sched.remove(seq);
            if (seen) *seen = std::move(plan);
            return seq;
        };

        Sequence* owner = make(kAlice, secret);
        sched.enqueue(owner, 0);
        QCOMPARE(run_first(0), owner);
        QCOMPARE(sched.cached_prefix(secret, kAlice), 9);  // two pages and one token of the tail
        QCOMPARE(sched.cached_prefix(secret, kBob), 0);
        QCOMPARE(sched.cached_prefix(secret), 0);          // nor in the default namespace

        // Bob asks with the same prompt: computed from scratch, no copy of Alice's page.
        arbor::sched::Plan plan;
        Sequence* probe = make(kBob, secret);
        sched.enqueue(probe, 1);
        QCOMPARE(run_first(1, &plan), probe);
        QCOMPARE(probe->cached_prompt_tokens, 0);
        QVERIFY(plan.copies.empty());
        QCOMPARE(plan.items[0].start, 0);

        // A short queue prefers cached prompts of the sequence's own namespace only: Carol's
        // copy of the secret does not overtake her older plain request.
        constexpr uint64_t kCarol = 13;
        Sequence* plain = make(kCarol, {40, 41, 42, 43, 44});
        Sequence* guess = make(kCarol, secret);
        sched.enqueue(plain, 2);
        sched.enqueue(guess, 2);
        QCOMPARE(run_first(2), plain);
        QCOMPARE(run_first(3), guess);
        QCOMPARE(guess->cached_prompt_tokens, 0);

        // Alice again: her own cache still serves her.
        Sequence* again = make(kAlice, secret);
        sched.enqueue(again, 4);
        QCOMPARE(run_first(4), again);
        QCOMPARE(again->cached_prompt_tokens, 9);

        cache.check_invariants();
        cache.clear();
        QCOMPARE(pool.free_count(), pool.capacity());
    }
};

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"
