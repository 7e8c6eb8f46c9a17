// The serving engine on the default model: neither batching nor preemption may change
// results, the prefix cache must serve follow-ups, regenerations and shared system
// prompts, and cancel (from any thread) and shutdown must release everything.
#include "engine_test_support.h"
#include "test_support.h"

#include "arbor/chat_template.h"
#include "arbor/engine.h"
#include "arbor/model.h"

#include <mutex>
#include <random>
#include <thread>

using arbor::test::Collector;
using arbor::test::greedy;
using arbor::test::prefill_only;

namespace {

const char* const kPrompts[] = {
    "The history of the printing press begins",
    "def quicksort(items):\n",
    "Once upon a time, in a small village by the sea,",
    "The three primary colors are",
    "北京是中国的首都，",
    "To make a cup of tea, first",
    "#include <vector>\nint main() {\n",
    "The mitochondria is",
};

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;

    arbor::EngineOptions options(int32_t kv_tokens = 8192) const {
        arbor::EngineOptions o;
        o.backend.kv_tokens = kv_tokens;
        o.backend.threads = 2;
        return o;
    }
    // clear_cache() is carried out by the engine loop: waits up to a second for the count.
    static int pages_used_after_clearing(arbor::Engine& engine) {
        engine.clear_cache();
        for (int i = 0; i < 100 && engine.stats().pages_used != 0; ++i) QTest::qWait(10);
        return engine.stats().pages_used;
    }
    // request(i) for each of kPrompts, one after another on an engine of its own: what each
    // generates alone. An empty list when one does not finish.
    template <class MakeRequest>
    std::vector<std::vector<arbor::TokenId>> solo_runs(MakeRequest&& request) const {
        arbor::Engine engine(*model_, options());
        Collector c;
        std::vector<std::vector<arbor::TokenId>> tokens;
        for (size_t i = 0; i < std::size(kPrompts); ++i) {
            const auto id = c.submit(engine, request(i));
            if (!c.wait(id)) return {};
            tokens.push_back(c.get(id).tokens);
        }
        return tokens;
    }
    std::vector<arbor::TokenId> encode(const std::string& text) const {
        return model_->tokenizer().encode(text, model_->tokenizer().adds_bos(), false);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        model_ = arbor::Model::load(arbor::test::model_path());
    }

    void concurrentRequestsMatchSoloRuns() {
        arbor::Engine engine(*model_, options());
        Collector c;
        std::vector<std::vector<arbor::TokenId>> alone;
        for (const char* p : kPrompts) {
            const auto id = c.submit(engine, greedy(encode(p), 24));
            QVERIFY(c.wait(id));
            alone.push_back(c.get(id).tokens);
            QVERIFY(!alone.back().empty());
        }
        engine.clear_cache();  // the batched run must compute everything again
        std::vector<arbor::RequestId> ids;
        for (const char* p : kPrompts) ids.push_back(c.submit(engine, greedy(encode(p), 24)));
        for (size_t i = 0; i < ids.size(); ++i) {
            QVERIFY(c.wait(ids[i]));
            QCOMPARE(c.get(ids[i]).tokens, alone[i]);
        }
    }

    // A pool of ten pages holds about two of eight requests at once (each needs four pages
    // by its last token): running ones are preempted, their pages freed and recomputed
    // later, and every request still generates exactly what it generates alone. Half of
    // them sample (seeded, with a repetition penalty): their random sequence and token
    // history must survive preemption too.
    void preemptedRequestsMatchSoloRuns() {
        const int kTokens = 40;
        auto request = [&](size_t i) {
            arbor::Request r = greedy(encode(kPrompts[i]), kTokens);
            r.options.stop_at_end_of_generation = false;  // every request needs its four pages
            if (i % 2) {
                r.options.sampler.temperature = 0.9f;
                r.options.sampler.seed = 1234 + i;
                r.options.sampler.repetition_penalty = 1.2f;
            }
            return r;
        };
        const auto alone = solo_runs(request);
        QCOMPARE(alone.size(), std::size(kPrompts));
        for (const auto& tokens : alone) QCOMPARE(int(tokens.size()), kTokens);
        arbor::Engine engine(*model_, options(10 * 16));
        Collector c;
        std::vector<arbor::RequestId> ids;
        for (size_t i = 0; i < std::size(kPrompts); ++i) ids.push_back(c.submit(engine, request(i)));
        for (size_t i = 0; i < ids.size(); ++i) {
            QVERIFY(c.wait(ids[i]));
            QCOMPARE(c.get(ids[i]).finish, arbor::FinishReason::Length);
            QCOMPARE(c.get(ids[i]).tokens, alone[i]);
        }
        engine.wait_idle();
        const arbor::EngineStats stats = engine.stats();
        qInfo("%llu preemptions in %llu steps", static_cast<unsigned long long>(stats.preemptions),
              static_cast<unsigned long long>(stats.steps));
        QCOMPARE(stats.pages_total, 10);
        QVERIFY2(stats.preemptions > 0, "ten pages for eight requests of four pages must force preemption");
        QCOMPARE(pages_used_after_clearing(engine), 0);
    }

    // Four threads submit requests of 1-24 tokens over the eight prompts into a pool of
    // eight pages (so the engine preempts), and cancel about a quarter of them at random
    // moments. Each finished request holds exactly the first tokens of its prompt's solo
    // run, each cancelled one a prefix of them, and the pool is whole afterwards.
    void manyThreadsSubmitAndCancelIntoATightPool() {
        const int kLongest = 24;
        auto request = [&](size_t prompt, int tokens) {
            arbor::Request r = greedy(encode(kPrompts[prompt]), tokens);
            r.options.stop_at_end_of_generation = false;
            return r;
        };
        const auto alone = solo_runs([&](size_t i) { return request(i, kLongest); });
        QCOMPARE(alone.size(), std::size(kPrompts));
        for (const auto& tokens : alone) QCOMPARE(int(tokens.size()), kLongest);
        arbor::EngineOptions o = options(8 * 16);
        o.max_batch_tokens = 24;  // prompts arrive in chunks beside the decoding rows
        arbor::Engine engine(*model_, o);
        Collector c;
        struct Submitted {
            arbor::RequestId id;
            size_t prompt;
            int tokens;
        };
        std::mutex mutex;
        std::vector<Submitted> submitted;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                std::mt19937 rng(2024 + t);
                for (int i = 0; i < 12; ++i) {
                    const size_t prompt = rng() % std::size(kPrompts);
                    const int tokens = 1 + int(rng() % kLongest);
                    const auto id = c.submit(engine, request(prompt, tokens));
                    {
                        std::lock_guard lock(mutex);
                        submitted.push_back({id, prompt, tokens});
                    }
                    if (rng() % 4 == 0) {
                        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
                        engine.cancel(id);
                    }
                }
            });
        for (auto& t : threads) t.join();
        int finished = 0, cancelled = 0;
        for (const Submitted& s : submitted) {
            QVERIFY(c.wait(s.id));
            const auto out = c.get(s.id);
            const auto& solo = alone[s.prompt];
            if (out.finish == arbor::FinishReason::Cancelled) {
                ++cancelled;
                QVERIFY(int(out.tokens.size()) <= s.tokens);
                QVERIFY(std::equal(out.tokens.begin(), out.tokens.end(), solo.begin()));
                continue;
            }
            ++finished;
            QCOMPARE(out.finish, arbor::FinishReason::Length);
            QCOMPARE(out.tokens, std::vector<arbor::TokenId>(solo.begin(), solo.begin() + s.tokens));
        }
        engine.wait_idle();
        qInfo("%d finished, %d cancelled, %llu preemptions", finished, cancelled,
              static_cast<unsigned long long>(engine.stats().preemptions));
        QVERIFY(finished > 0);
        QCOMPARE(pages_used_after_clearing(engine), 0);
    }

    void followUpTurnIsServedFromTheCache() {
        arbor::Engine engine(*model_, options());
        const arbor::ChatFormatter chat(model_->tokenizer(), arbor::detect_chat_template(model_->chat_template_source()));
        std::vector<arbor::ChatMessage> messages = {
            {arbor::Role::System, chat.encode_content("You are a helpful assistant who answers briefly.")},
            {arbor::Role::User, chat.encode_content("Name three rivers in Europe.")},
        };
        Collector c;
        for (int turn = 0; turn < 3; ++turn) {
            const auto prompt = chat.compose(messages);
            const auto id = c.submit(engine, greedy(prompt, 40));
            QVERIFY(c.wait(id));
            const auto out = c.get(id);
            if (turn > 0) {
                // Previous prompt plus reply (the issue allows one page less; only the last
                // reply id, never run through the model, is computed again).
                QVERIFY2(out.stats.cached_tokens >= previous_ - 1,
                         qPrintable(QString("cached %1 of %2, previous prompt + reply %3")
                                        .arg(out.stats.cached_tokens).arg(prompt.size()).arg(previous_)));
            }
            previous_ = int(prompt.size()) + int(out.tokens.size());
            messages.push_back({arbor::Role::Assistant, out.tokens});
            messages.push_back({arbor::Role::User, chat.encode_content(turn == 0 ? "Which is longest?" : "Thanks!")});
        }
    }

    // A prefill-only request after a reply computes the next user turn's
    // opening; the follow-up then computes only the user's words and the assistant header,
    // and generates exactly what it generates without the warm-up.
    void followUpPrefixWarmsTheCache() {
        const arbor::ChatFormatter chat(model_->tokenizer(), arbor::detect_chat_template(model_->chat_template_source()));
        std::vector<arbor::ChatMessage> messages = {{arbor::Role::User, chat.encode_content("Name a red fruit.")}};
        std::vector<arbor::TokenId> outputs[2];
        for (bool warm : {false, true}) {
            arbor::Engine engine(*model_, options());
            Collector c;
            const auto prompt = chat.compose(messages);
            const auto first = c.submit(engine, greedy(prompt, 12));
            QVERIFY(c.wait(first));
            const auto reply = c.get(first).tokens;
            const auto prefix = chat.follow_up_prefix(prompt, reply);
            if (warm) {
                auto request = prefill_only(prefix);
                const auto id = c.submit(engine, request);
                QVERIFY(c.wait(id));
                const auto out = c.get(id);
                QCOMPARE(out.finish, arbor::FinishReason::Length);
                QVERIFY(out.tokens.empty());
                QCOMPARE(out.token_events, 0);
                QCOMPARE(out.stats.prompt_tokens, int(prefix.size()));
                QCOMPARE(out.stats.generated_tokens, 0);
            }
            auto follow = messages;
            follow.push_back({arbor::Role::Assistant, reply});
            const auto user = chat.encode_content("And a yellow one?");
            follow.push_back({arbor::Role::User, user});
            const auto next = chat.compose(follow);
            const auto id = c.submit(engine, greedy(next, 12));
            QVERIFY(c.wait(id));
            const auto out = c.get(id);
            const int computed = int(next.size()) - out.stats.cached_tokens;
            if (warm)
                QVERIFY2(out.stats.cached_tokens == int(prefix.size()),
                         qPrintable(QString("cached %1, warmed prefix %2").arg(out.stats.cached_tokens).arg(prefix.size())));
            else
                QVERIFY2(computed > int(next.size() - prefix.size()),
                         qPrintable(QString("computed %1 without the warm-up").arg(computed)));
            outputs[warm] = out.tokens;
            engine.wait_idle();
            QCOMPARE(engine.stats().running + engine.stats().waiting, 0);
        }
        QCOMPARE(outputs[1], outputs[0]);
    }

    void regenerationReusesThePrompt() {
        arbor::Engine engine(*model_, options());
        Collector c;
        const auto prompt = encode("Write a short poem about the autumn wind blowing through the old oak trees of the valley.");
        const auto first = c.submit(engine, greedy(prompt, 20));
        QVERIFY(c.wait(first));
        const auto again = c.submit(engine, greedy(prompt, 20));
        QVERIFY(c.wait(again));
        QCOMPARE(c.get(first).stats.cached_tokens, 0);
        // The whole prompt but its last token, which must run to produce logits.
        QCOMPARE(c.get(again).stats.cached_tokens, int(prompt.size()) - 1);
        QVERIFY2(c.get(again).stats.cached_tokens >= int(prompt.size()) - 1,
                 qPrintable(QString("cached %1 of %2").arg(c.get(again).stats.cached_tokens).arg(prompt.size())));
        QCOMPARE(c.get(again).tokens, c.get(first).tokens);
    }

    // Requests of another cache namespace compute the prompt again (cached_tokens 0, the
    // same tokens), while the owner's namespace is still served from the cache.
    void cacheNamespacesAreIsolated() {
        arbor::Engine engine(*model_, options());
        Collector c;
        const auto prompt = encode("My bank password is hunter2 and my pin is 4921, please keep both of them secret.");
        auto in = [&](uint64_t ns) {
            auto r = greedy(prompt, 12);
            r.cache_namespace = ns;
            const auto id = c.submit(engine, std::move(r));
            return c.wait(id) ? c.get(id) : arbor::test::Outcome{};
        };
        const auto owner = in(0);
        QVERIFY(owner.finished);
        for (uint64_t other : {uint64_t(1), uint64_t(0x9e3779b97f4a7c15ull)}) {
            const auto probe = in(other);
            QVERIFY(probe.finished);
            QCOMPARE(probe.stats.cached_tokens, 0);
            QCOMPARE(probe.tokens, owner.tokens);
        }
        const auto again = in(0);
        QCOMPARE(again.stats.cached_tokens, int(prompt.size()) - 1);
        QCOMPARE(again.tokens, owner.tokens);
    }

    void sameSystemPromptSharesPages() {
        arbor::Engine engine(*model_, options());
        std::string system = "You are Arbor, a careful assistant. ";
        for (int i = 0; i < 12; ++i) system += "Always check facts, explain your reasoning step by step, and keep answers short. ";
        const auto sys_ids = encode(system);
        QVERIFY(sys_ids.size() > 200);
        Collector c;
        auto conversation = [&](const char* user) {
            auto ids = sys_ids;
            const auto u = encode(user);
            ids.insert(ids.end(), u.begin(), u.end());
            return ids;
        };
        const auto a = conversation("What is the boiling point of water?");
        const auto b = conversation("How many legs does a spider have?");
        const auto id_a = c.submit(engine, greedy(a, 8));
        QVERIFY(c.wait(id_a));
        engine.wait_idle();
        const int used_after_a = engine.stats().pages_used;
        const auto id_b = c.submit(engine, greedy(b, 8));
        QVERIFY(c.wait(id_b));
        engine.wait_idle();
        const int used_after_b = engine.stats().pages_used;
        const int shared_pages = int(sys_ids.size()) / 16;
        const int b_pages = int(b.size() + 8 + 15) / 16;
        QVERIFY2(c.get(id_b).stats.cached_tokens >= shared_pages * 16,
                 qPrintable(QString("cached %1").arg(c.get(id_b).stats.cached_tokens)));
        QVERIFY2(used_after_b - used_after_a <= b_pages - shared_pages,
                 qPrintable(QString("pages used %1 -> %2").arg(used_after_a).arg(used_after_b)));
    }

    void cancelWorksAtEveryStageAndFreesEverything() {
        arbor::EngineOptions o = options();
        o.max_batch_tokens = 32;  // a long prompt takes several steps
        o.max_running = 2;        // further requests stay queued
        arbor::Engine engine(*model_, o);
        Collector c;
        std::string long_text;
        for (int i = 0; i < 40; ++i) long_text += "A long document line that keeps the prefill busy for a while. ";
        auto count = greedy(encode("Count from one to one hundred:"), 400);
        count.options.stop_at_end_of_generation = false;
        const auto decoding = c.submit(engine, std::move(count));
        QVERIFY(c.wait_for_tokens(decoding, 2));
        const auto prefilling = c.submit(engine, greedy(encode(long_text), 50));
        const auto queued = c.submit(engine, greedy(encode("This one waits in the queue."), 50));
        engine.cancel(queued);
        engine.cancel(prefilling);
        engine.cancel(decoding);
        for (auto id : {decoding, prefilling, queued}) {
            QVERIFY(c.wait(id));
            QCOMPARE(c.get(id).finish, arbor::FinishReason::Cancelled);
        }
        QVERIFY(c.get(prefilling).tokens.empty());
        engine.wait_idle();
        QCOMPARE(pages_used_after_clearing(engine), 0);
        QCOMPARE(engine.stats().running + engine.stats().waiting, 0);
    }

    // A prompt computed in chunks reports after each chunk but the last how much of it is
    // done, before any token; a warm-up (nobody waits for it) and a short prompt do not.
    void prefillReportsProgressPerChunk() {
        arbor::EngineOptions o = options();
        o.max_batch_tokens = 32;
        arbor::Engine engine(*model_, o);
        Collector c;
        std::string text;
        for (int i = 0; i < 12; ++i) text += "A line of a long document that the model reads first. ";
        const auto prompt = encode(text);
        QVERIFY2(prompt.size() > 100, qPrintable(QString::number(prompt.size())));
        const auto id = c.submit(engine, greedy(prompt, 3));
        QVERIFY(c.wait(id));
        const auto out = c.get(id);
        QCOMPARE(out.finish, arbor::FinishReason::Length);
        QCOMPARE(out.stats.prompt_tokens, int(prompt.size()));
        // At least ceil(n / 32) chunks, one report after each but the last, each further on.
        QVERIFY2(out.prefilled.size() >= (prompt.size() + 31) / 32 - 1, qPrintable(QString::number(out.prefilled.size())));
        for (size_t i = 0; i < out.prefilled.size(); ++i) {
            QVERIFY(out.prefilled[i] > (i == 0 ? 0 : out.prefilled[i - 1]));
            QVERIFY(out.prefilled[i] < int32_t(prompt.size()));
        }
        QCOMPARE(out.progress_after_tokens, 0);

        // The same prompt again: all but its last token from the cache, one chunk.
        const auto again = c.submit(engine, greedy(prompt, 1));
        QVERIFY(c.wait(again));
        QVERIFY(c.get(again).prefilled.empty());

        arbor::Request warm = prefill_only(encode(text + " And more."));
        const auto warm_id = c.submit(engine, std::move(warm));
        QVERIFY(c.wait(warm_id));
        QVERIFY(c.get(warm_id).prefilled.empty());
        const auto short_id = c.submit(engine, greedy(encode("Hi"), 1));
        QVERIFY(c.wait(short_id));
        QVERIFY(c.get(short_id).prefilled.empty());
    }

    void badRequestsFinishWithAnError() {
        arbor::Engine engine(*model_, options(256));
        Collector c;
        const auto empty = c.submit(engine, greedy({}, 4));
        const auto too_long = c.submit(engine, greedy(std::vector<arbor::TokenId>(300, 42), 4));
        const auto bad_id = c.submit(engine, greedy({1, 2, 99999999}, 4));
        // A reply of no tokens is an error, not a warm-up (RequestKind::PrefillOnly is).
        const auto no_tokens = c.submit(engine, greedy({1, 2, 3}, 0));
        for (auto id : {empty, too_long, bad_id, no_tokens}) {
            QVERIFY(c.wait(id));
            QCOMPARE(c.get(id).finish, arbor::FinishReason::Error);
            QVERIFY(!c.get(id).error.empty());
        }
        QVERIFY(c.get(no_tokens).tokens.empty());
    }

    // A reply that reaches the end of the context stops there with its own reason, far
    // from its max_tokens; one whose max_tokens ends exactly at the context's end (as the
    // API asks, capped to the room left) stops at max tokens.
    void replyEndsWhenTheContextIsFull() {
        constexpr int kContext = 48;
        arbor::EngineOptions o = options();
        o.context_tokens = kContext;
        arbor::Engine engine(*model_, o);
        QCOMPARE(engine.context_size(), kContext);
        const auto prompt = encode(kPrompts[0]);
        const int room = kContext - int(prompt.size());
        QVERIFY(room > 1);
        Collector c;
        auto request = [&](int max_tokens) {
            arbor::Request r = greedy(prompt, max_tokens);
            r.options.stop_at_end_of_generation = false;  // nothing but a length ends it
            return c.submit(engine, std::move(r));
        };
        const auto long_reply = request(1000);
        QVERIFY(c.wait(long_reply));
        QCOMPARE(c.get(long_reply).finish, arbor::FinishReason::ContextFull);
        QCOMPARE(int(c.get(long_reply).tokens.size()), room);
        QCOMPARE(arbor::finish_reason_name(c.get(long_reply).finish), std::string_view("context full"));
        const auto capped = request(room);
        QVERIFY(c.wait(capped));
        QCOMPARE(c.get(capped).finish, arbor::FinishReason::Length);
        QCOMPARE(c.get(capped).tokens, c.get(long_reply).tokens);
    }

    // A sink that throws on its Finished event gets no second one (the engine once
    // failed the step and finished the request again with an error); the engine goes on
    // serving.
    void failedStepFinishesEachRequestOnce() {
        arbor::Engine engine(*model_, options());
        std::mutex m;
        int finished_events = 0;
        arbor::FinishReason first_reason = arbor::FinishReason::Error;
        engine.submit(greedy(encode("The sky is"), 2), [&](const arbor::Event& e) {
            if (e.kind != arbor::Event::Kind::Finished) return;
            std::lock_guard lock(m);
            if (++finished_events == 1) {
                first_reason = e.finish;
                throw std::runtime_error("the sink failed");
            }
        });
        engine.wait_idle();
        {
            std::lock_guard lock(m);
            QCOMPARE(finished_events, 1);
            QCOMPARE(first_reason, arbor::FinishReason::Length);
        }
        Collector c;
        const auto next = c.submit(engine, greedy(encode("The sky is"), 2));
        QVERIFY(c.wait(next));
        QCOMPARE(c.get(next).finish, arbor::FinishReason::Length);
        QCOMPARE(c.get(next).tokens.size(), size_t(2));
        engine.wait_idle();  // the Finished event comes before the engine's stats are updated
        QCOMPARE(engine.stats().running, 0);
    }

    // A sink that throws on every event ends its own request with one Finished(Error)
    // event, and nothing else: a request running beside it in the same steps generates
    // what it generates alone. (The engine once let the second throw, from the Finished
    // event of the failed step, escape its loop: std::terminate.)
    void throwingSinkEndsOnlyItsRequest() {
        arbor::Engine engine(*model_, options());
        const auto prompt = encode("The sky is");
        Collector solo;
        const auto alone = solo.submit(engine, greedy(prompt, 6));
        QVERIFY(solo.wait(alone));
        QCOMPARE(solo.get(alone).finish, arbor::FinishReason::Length);

        std::mutex m;
        int token_events = 0, finished_events = 0;
        arbor::FinishReason reason = arbor::FinishReason::Length;
        std::string error;
        Collector c;
        engine.submit(greedy(encode("Once upon a time"), 6), [&](const arbor::Event& e) {
            {
                std::lock_guard lock(m);
                if (e.kind == arbor::Event::Kind::Token) ++token_events;
                else {
                    ++finished_events;
                    reason = e.finish;
                    error = e.error;
                }
            }
            throw std::runtime_error("the sink failed");
        });
        const auto beside = c.submit(engine, greedy(prompt, 6));
        QVERIFY(c.wait(beside));
        engine.wait_idle();
        {
            std::lock_guard lock(m);
            QCOMPARE(finished_events, 1);
            QCOMPARE(reason, arbor::FinishReason::Error);
            QVERIFY2(error.find("the sink failed") != std::string::npos, error.c_str());
            QCOMPARE(token_events, 1);
        }
        QCOMPARE(c.get(beside).finish, arbor::FinishReason::Length);
        QCOMPARE(c.get(beside).tokens, solo.get(alone).tokens);
        QCOMPARE(engine.stats().running, 0);
    }

    void shutdownCancelsEverything() {
        auto engine = std::make_unique<arbor::Engine>(*model_, options());
        Collector c;
        auto request = greedy(encode("Tell me a very long story."), 1000);
        request.options.stop_at_end_of_generation = false;
        const auto id = c.submit(*engine, std::move(request));
        QVERIFY(c.wait_for_tokens(id, 1));
        engine->shutdown();
        QVERIFY(c.get(id).finished);
        QCOMPARE(c.get(id).finish, arbor::FinishReason::Cancelled);
        const auto late = c.submit(*engine, greedy(encode("too late"), 4));
        QVERIFY(c.get(late).finished);
        engine.reset();
    }

private:
    int previous_ = 0;
};

QTEST_GUILESS_MAIN(TestEngine)
#include "test_engine.moc"
