// Consistency of the batched, paged forward pass on the default model: chunking,
// prefix reuse, page placement and batching of several sequences must not change the
// logits beyond float noise.
#include "test_support.h"

#include "arbor/generator.h"
#include "arbor/model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace {

float max_abs_diff(const float* a, const float* b, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

// A short prose prompt tokenized by the model itself (the ids only need to be realistic).
std::vector<arbor::TokenId> sample_ids(const arbor::Model& m, int copies = 1) {
    std::string text;
    for (int i = 0; i < copies; ++i)
        text += "The old lighthouse keeper climbed the stairs each evening, counting the steps "
                "and listening to the sea against the rocks below. ";
    return m.tokenizer().encode(text, m.tokenizer().adds_bos(), false);
}

} // namespace

class TestForward : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;
    std::unique_ptr<arbor::Backend> backend_;
    int32_t vocab_ = 0;

    std::vector<float> last_logits(arbor::Generator& gen, const std::vector<arbor::TokenId>& ids) {
        gen.reset();
        return gen.prefill(ids);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        model_ = arbor::Model::load(arbor::test::model_path());
        arbor::BackendOptions options;
        options.kv_tokens = 2048;
        options.threads = 2;
        backend_ = arbor::make_cpu_backend(*model_, options);
        vocab_ = model_->config().n_vocab;
    }

    void logitsAreFiniteAndPlausible() {
        arbor::Generator gen(*model_, *backend_);
        const auto logits = last_logits(gen, sample_ids(*model_));
        QCOMPARE(int(logits.size()), vocab_);
        for (float v : logits) QVERIFY(std::isfinite(v));
        const float spread = *std::max_element(logits.begin(), logits.end()) - *std::min_element(logits.begin(), logits.end());
        QVERIFY2(spread > 5.0f, "logits are nearly flat: the forward pass is not doing its work");
    }

    void chunkedPrefillEqualsOnePass() {
        const auto ids = sample_ids(*model_, 3);
        arbor::Generator whole(*model_, *backend_, 4096);
        const auto a = last_logits(whole, ids);
        arbor::Generator chunked(*model_, *backend_, 7);
        const auto b = last_logits(chunked, ids);
        QVERIFY(max_abs_diff(a.data(), b.data(), a.size()) < 2e-3f);
    }

    void prefixReuseEqualsFreshComputation() {
        const auto ids = sample_ids(*model_, 2);
        arbor::Generator gen(*model_, *backend_);
        const auto fresh = last_logits(gen, ids);
        gen.reset();
        gen.prefill(std::span(ids.data(), ids.size() / 2));
        int32_t reused = 0;
        const auto extended = gen.prefill(ids, &reused);
        QCOMPARE(reused, int32_t(ids.size() / 2));
        QVERIFY(max_abs_diff(fresh.data(), extended.data(), fresh.size()) < 2e-3f);
    }

    // Two sequences in one step, with scattered, interleaved pages, give the same logits
    // as each computed alone.
    void batchedSequencesOnScatteredPagesMatchSingleRuns() {
        const auto a_ids = sample_ids(*model_, 1);
        auto b_ids = model_->tokenizer().encode("def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n", false, false);
        arbor::Generator gen(*model_, *backend_);
        const auto a_alone = last_logits(gen, a_ids);
        const auto b_alone = last_logits(gen, b_ids);

        const int32_t ps = backend_->page_size();
        const int32_t pages = backend_->page_count();
        std::vector<int32_t> table_a, table_b;
        for (int32_t i = 0; i * ps < int32_t(a_ids.size()); ++i) table_a.push_back(pages - 1 - 2 * i);
        for (int32_t i = 0; i * ps < int32_t(b_ids.size()); ++i) table_b.push_back(pages - 2 - 2 * i);
        arbor::ForwardBatch batch;
        batch.tokens = a_ids;
        batch.tokens.insert(batch.tokens.end(), b_ids.begin(), b_ids.end());
        batch.sequences.push_back({0, int32_t(a_ids.size()), 0, table_a, arbor::SequenceRows::Logits::Last});
        batch.sequences.push_back({int32_t(a_ids.size()), int32_t(b_ids.size()), 0, table_b, arbor::SequenceRows::Logits::Last});
        std::vector<float> logits;
        backend_->forward(batch, logits);
        QCOMPARE(logits.size(), size_t(2 * vocab_));
        QVERIFY(max_abs_diff(logits.data(), a_alone.data(), size_t(vocab_)) < 2e-3f);
        QVERIFY(max_abs_diff(logits.data() + vocab_, b_alone.data(), size_t(vocab_)) < 2e-3f);

        // A decode row of one sequence next to a prefill chunk of the other.
        arbor::ForwardBatch mixed;
        mixed.tokens = {b_ids.back()};
        mixed.tokens.insert(mixed.tokens.end(), a_ids.begin(), a_ids.end());
        mixed.sequences.push_back({0, 1, int32_t(b_ids.size()) - 1, table_b, arbor::SequenceRows::Logits::Last});
        mixed.sequences.push_back({1, int32_t(a_ids.size()), 0, table_a, arbor::SequenceRows::Logits::Last});
        backend_->forward(mixed, logits);
        QVERIFY(max_abs_diff(logits.data(), b_alone.data(), size_t(vocab_)) < 2e-3f);
        QVERIFY(max_abs_diff(logits.data() + vocab_, a_alone.data(), size_t(vocab_)) < 2e-3f);
    }

    // A row with more positions than BackendOptions::attention_part attends in parts
    // merged by their softmax statistics: the logits match attention in one pass (within
    // float noise, but not bit for bit: the parts did run), at the default part and at
    // one page per part. (The bound is float reordering noise measured with an F32 cache
    // and exact float products: the F16 cache's kernels are the F32 ones after an exact
    // conversion, while the panels' 16-bit activations would let such noise move an
    // activation by a whole rounding step, 2.01e-3 here.)
    void attentionInPartsMatchesOnePass() {
        // Parts of 64 and of 16 positions over a prompt of ~200 tokens: several of each,
        // and few enough products that the scalar kernels (ARBOR_CPU_ISA=scalar, a CPU
        // without AVX2) finish the three prefills in under three minutes (three of ~560
        // tokens took over five there).
        const auto ids = sample_ids(*model_, 12);
        QVERIFY2(ids.size() > 2 * 64, "the prompt must span three parts of 64 positions");
        arbor::BackendOptions options;
        options.kv_tokens = 2048;
        options.threads = 2;
        options.kv_type = arbor::KvType::F32;
        options.panel_weights = false;
        options.attention_part = 0;
        auto one_pass = arbor::make_cpu_backend(*model_, options);
        arbor::Generator whole(*model_, *one_pass);
        const auto want = last_logits(whole, ids);
        for (int32_t part : {64, 16}) {
            options.attention_part = part;
            auto in_parts = arbor::make_cpu_backend(*model_, options);
            arbor::Generator gen(*model_, *in_parts);
            const auto got = last_logits(gen, ids);
            const float diff = max_abs_diff(got.data(), want.data(), want.size());
            QVERIFY2(diff < 2e-3f, qPrintable(QString("parts of %1: logits differ by %2").arg(part).arg(diff)));
            QVERIFY2(got != want, qPrintable(QString("parts of %1: bit-identical to one pass").arg(part)));
        }
    }

    // The page size moves positions between pages, and with pages of 5 the boundary of
    // the 256-position attention parts falls inside a page: a prompt's rows (attended in
    // blocks) and a lone next row still give the same bits. Keys are stored as page
    // columns and values gathered by position, so only the layout changes, not the sums.
    void pageSizeDoesNotChangeTheLogits() {
        const auto ids = sample_ids(*model_, 12);
        QVERIFY2(ids.size() > 256 + 8, "the prompt must span two attention parts");
        const std::span<const arbor::TokenId> all(ids), prompt = all.first(all.size() - 1);
        std::vector<float> want_prompt, want_next;
        for (int32_t page_size : {16, 5, 8}) {
            arbor::BackendOptions options;
            options.kv_tokens = 1024;
            options.threads = 2;
            options.page_size = page_size;
            auto backend = arbor::make_cpu_backend(*model_, options);
            arbor::Generator gen(*model_, *backend);
            const auto got_prompt = gen.prefill(prompt);
            int32_t reused = 0;
            const auto got_next = gen.prefill(all, &reused);
            QCOMPARE(reused, int32_t(prompt.size()));
            if (want_prompt.empty()) {
                want_prompt = got_prompt;
                want_next = got_next;
                continue;
            }
            QVERIFY2(got_prompt == want_prompt, qPrintable(QString("pages of %1: the prompt's logits differ").arg(page_size)));
            QVERIFY2(got_next == want_next, qPrintable(QString("pages of %1: the next row's logits differ").arg(page_size)));
        }
    }

    // The last row of a long sequence gives the same bits at the end of its prefill and
    // as a lone decode row beside another sequence's prefill: its attention parts depend
    // on its position only.
    void longRowInPartsDoesNotDependOnItsBatch() {
        const auto a_ids = sample_ids(*model_, 32);
        const auto b_ids = sample_ids(*model_, 2);
        QVERIFY(a_ids.size() > 256);
        const int32_t ps = backend_->page_size();
        std::vector<int32_t> table_a, table_b;
        for (int32_t i = 0; i * ps < int32_t(a_ids.size()); ++i) table_a.push_back(i);
        for (int32_t i = 0; i * ps < int32_t(b_ids.size()); ++i) table_b.push_back(int32_t(table_a.size()) + i);
        arbor::ForwardBatch prefill;
        prefill.tokens = a_ids;
        prefill.sequences.push_back({0, int32_t(a_ids.size()), 0, table_a, arbor::SequenceRows::Logits::Last});
        std::vector<float> in_prefill, mixed_logits;
        backend_->forward(prefill, in_prefill);

        arbor::ForwardBatch mixed;
        mixed.tokens = b_ids;
        mixed.tokens.push_back(a_ids.back());
        mixed.sequences.push_back({0, int32_t(b_ids.size()), 0, table_b, arbor::SequenceRows::Logits::Last});
        mixed.sequences.push_back({int32_t(b_ids.size()), 1, int32_t(a_ids.size()) - 1, table_a,
                                   arbor::SequenceRows::Logits::Last});
        backend_->forward(mixed, mixed_logits);
        QCOMPARE(mixed_logits.size(), size_t(2 * vocab_));
        QVERIFY(std::equal(in_prefill.begin(), in_prefill.end(), mixed_logits.begin() + vocab_));
    }

    // A prefill-only request asking for logits gets those of every position it computed:
    // after a cached prefix, the rows from the prefix's end on; they match one forward
    // pass over the whole sequence. Only a prefill-only request may ask.
    void engineReturnsTheLogitsOfEveryComputedPosition() {
        const auto ids = sample_ids(*model_, 2);
        const int32_t n = int32_t(ids.size()), half = n / 2;
        std::vector<int32_t> table;
        for (int32_t i = 0; i * backend_->page_size() < n; ++i) table.push_back(i);
        arbor::ForwardBatch batch;
        batch.tokens = ids;
        batch.sequences.push_back({0, n, 0, table, arbor::SequenceRows::Logits::All});
        std::vector<float> want;
        backend_->forward(batch, want);
        const auto rows_of = [&](int32_t from) { return want.data() + size_t(from) * size_t(vocab_); };

        arbor::Engine engine(*model_, *backend_);
        const auto probe = [&](std::span<const arbor::TokenId> prompt, arbor::SequenceRows::Logits which,
                               arbor::RequestKind kind = arbor::RequestKind::PrefillOnly) {
            arbor::Request r;
            r.prompt.assign(prompt.begin(), prompt.end());
            r.kind = kind;
            r.logits = which;
            r.options.max_tokens = 1;
            return arbor::generate(engine, std::move(r));
        };
        const auto first = probe(std::span(ids).first(size_t(half)), arbor::SequenceRows::Logits::All);
        QCOMPARE(first.finish, arbor::FinishReason::Length);
        QCOMPARE(first.stats.cached_tokens, 0);
        QCOMPARE(first.logits.size(), size_t(half) * size_t(vocab_));
        QVERIFY(max_abs_diff(first.logits.data(), rows_of(0), first.logits.size()) < 2e-3f);

        const auto rest = probe(ids, arbor::SequenceRows::Logits::All);
        QCOMPARE(rest.stats.cached_tokens, half);
        QCOMPARE(rest.logits.size(), size_t(n - half) * size_t(vocab_));
        QVERIFY(max_abs_diff(rest.logits.data(), rows_of(half), rest.logits.size()) < 2e-3f);

        const auto last = probe(ids, arbor::SequenceRows::Logits::Last);
        QCOMPARE(last.stats.cached_tokens, n - 1);
        QCOMPARE(last.logits.size(), size_t(vocab_));
        QVERIFY(max_abs_diff(last.logits.data(), rows_of(n - 1), last.logits.size()) < 2e-3f);

        const auto refused = probe(ids, arbor::SequenceRows::Logits::Last, arbor::RequestKind::Generate);
        QCOMPARE(refused.finish, arbor::FinishReason::Error);
        QVERIFY2(refused.error.find("prefill-only") != std::string::npos, refused.error.c_str());
        QVERIFY(refused.logits.empty() && refused.tokens.empty());
    }

    void invalidBatchesAreRejected() {
        std::vector<float> logits;
        const std::vector<int32_t> table = {0};
        arbor::ForwardBatch bad_token;
        bad_token.tokens = {vocab_ + 5};
        bad_token.sequences.push_back({0, 1, 0, table, arbor::SequenceRows::Logits::Last});
        QVERIFY_THROWS_EXCEPTION(arbor::Error, backend_->forward(bad_token, logits));
        arbor::ForwardBatch short_table;
        short_table.tokens = {1};
        short_table.sequences.push_back({0, 1, backend_->page_size(), table, arbor::SequenceRows::Logits::Last});
        QVERIFY_THROWS_EXCEPTION(arbor::Error, backend_->forward(short_table, logits));
    }

    void greedyGenerationIsDeterministicAndStopsAtLength() {
        arbor::Generator gen(*model_, *backend_);
        arbor::GenerateOptions options;
        options.sampler.temperature = 0.0f;
        options.max_tokens = 12;
        options.stop_at_end_of_generation = false;
        const auto ids = sample_ids(*model_);
        const auto a = gen.generate(ids, options);
        gen.reset();
        const auto b = gen.generate(ids, options);
        QCOMPARE(a.tokens, b.tokens);
        QCOMPARE(int(a.tokens.size()), 12);
        QCOMPARE(a.finish, arbor::FinishReason::Length);
        QCOMPARE(a.text, model_->tokenizer().decode(a.tokens));
    }

    void contextOverflowIsAnError() {
        arbor::BackendOptions options;
        options.kv_tokens = 32;
        auto small = arbor::make_cpu_backend(*model_, options);
        arbor::Generator gen(*model_, *small);
        QCOMPARE(gen.context_size(), 32);
        const std::vector<arbor::TokenId> ids(40, 1);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, gen.prefill(ids));
    }
};

QTEST_APPLESS_MAIN(TestForward)
#include "test_forward.moc"
