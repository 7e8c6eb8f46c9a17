// The Q8_0 KV cache on the default model, against the F16 cache (the default): the
// fidelity prompts of tests/data/fidelity teacher-forced on their reference continuations
// (argmax agreement >= 99%) and decoded greedily (the first 16 tokens identical for >= 14
// of 16 prompts); a row's logits do not depend on its batch; pages are about half of F16's.
#include "fidelity_data.h"
#include "test_support.h"

#include "arbor/generator.h"
#include "arbor/model.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>

using arbor::test::argmax;
using arbor::test::ids_of;

class TestQ8KvFidelity : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;
    std::unique_ptr<arbor::Backend> f16_kv_, q8_kv_;
    QJsonArray prompts_;

    std::unique_ptr<arbor::Backend> backend(arbor::KvType type) {
        arbor::BackendOptions options;
        options.kv_tokens = 4096;
        options.kv_type = type;
        return arbor::make_cpu_backend(*model_, options);
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QFile f(QString::fromStdString((arbor::test::test_data_dir() / "fidelity" / "smollm2-135m-instruct-q4_1.json").string()));
        QVERIFY2(f.open(QIODevice::ReadOnly), "reference data file missing");
        prompts_ = QJsonDocument::fromJson(f.readAll()).object().value("prompts").toArray();
        QVERIFY2(prompts_.size() >= 16, "reference data needs at least 16 prompts");
        while (prompts_.size() > 16) prompts_.removeLast();
        model_ = arbor::Model::load(arbor::test::model_path());
        f16_kv_ = backend(arbor::KvType::F16);
        q8_kv_ = backend(arbor::KvType::Q8_0);
        QCOMPARE(q8_kv_->kv_type(), arbor::KvType::Q8_0);
    }

    // Q8_0 pages hold a position in 17/32 of F16's bytes (int8 elements plus a half scale
    // per 32): a budget holds about twice the tokens.
    void pagesAreAboutHalfOfF16() {
        const double ratio = double(q8_kv_->page_bytes()) / double(f16_kv_->page_bytes());
        qInfo("page bytes: F16 %zu, Q8_0 %zu (%.3f)", f16_kv_->page_bytes(), q8_kv_->page_bytes(), ratio);
        QVERIFY2(ratio > 0.5 && ratio < 0.56, qPrintable(QString::number(ratio)));
    }

    // Teacher-forced on the reference continuations, the argmax with a Q8_0 cache is the
    // F16 cache's at >= 99% of positions.
    void teacherForcedArgmaxAgreesWithF16() {
        arbor::Generator f16(*model_, *f16_kv_), q8(*model_, *q8_kv_);
        const int32_t vocab = model_->config().n_vocab;
        int agree = 0, total = 0;
        for (const auto& p : prompts_) {
            const auto o = p.toObject();
            const auto prompt = ids_of(o.value("prompt_ids"));
            const auto cont = ids_of(o.value("greedy_ids"));
            std::vector<arbor::TokenId> seq = prompt;
            seq.insert(seq.end(), cont.begin(), cont.end() - 1);
            f16.reset();
            q8.reset();
            const auto want = f16.logits_for_all(seq), got = q8.logits_for_all(seq);
            int local = 0;
            for (size_t i = 0; i < cont.size(); ++i) {
                const size_t row = (prompt.size() - 1 + i) * size_t(vocab);
                local += argmax(&got[row], vocab) == argmax(&want[row], vocab);
            }
            qInfo("%-24s %2d/%zu positions agree", qPrintable(o.value("name").toString()), local, cont.size());
            agree += local;
            total += int(cont.size());
        }
        const double share = double(agree) / total;
        qInfo("Q8_0 vs F16 KV argmax agreement: %d of %d (%.2f%%)", agree, total, 100.0 * share);
        // Measured 1016 of 1024 (99.22%); GGUF's reference rounding (against the float
        // scale rather than the stored half) gave 1010 (98.63%).
        QVERIFY2(share >= 0.99, qPrintable(QString("agreement %1 below 99%").arg(share)));
    }

    // Greedy decoding with each cache: the first 16 tokens are identical for >= 14 of 16 prompts.
    void greedyPrefixesMatchF16() {
        arbor::Generator f16(*model_, *f16_kv_), q8(*model_, *q8_kv_);
        arbor::GenerateOptions options;
        options.sampler.temperature = 0.0f;
        options.max_tokens = 16;
        options.stop_at_end_of_generation = false;
        int same = 0;
        for (const auto& p : prompts_) {
            const auto o = p.toObject();
            const auto prompt = ids_of(o.value("prompt_ids"));
            f16.reset();
            q8.reset();
            const auto want = f16.generate(prompt, options).tokens, got = q8.generate(prompt, options).tokens;
            QCOMPARE(got.size(), size_t(16));
            if (got != want) qInfo("greedy prefix differs for %s", qPrintable(o.value("name").toString()));
            same += got == want;
        }
        qInfo("Q8_0 vs F16 KV identical 16-token greedy prefixes: %d of %lld", same,
              static_cast<long long>(prompts_.size()));
        // Measured 14 of 16 (prose_long and chat_recipe differ); with GGUF's reference
        // rounding 13 (unicode_mixed too).
        QVERIFY(same >= 14);
    }

    // A sequence's last row gives the same bits computed in its prefill (a block of rows:
    // values converted to floats once) and as a lone decode row beside another sequence's
    // prefill (read straight from the Q8_0 pages).
    void rowDoesNotDependOnItsBatch() {
        const auto& tok = model_->tokenizer();
        std::string text;
        for (int i = 0; i < 24; ++i) text += "The tide came in over the flat sand, slow and grey, as it had for years. ";
        const auto a_ids = tok.encode(text, tok.adds_bos(), false);
        const auto b_ids = tok.encode("A short second prompt about gardens and rain.", tok.adds_bos(), false);
        QVERIFY(a_ids.size() > 256);  // attention in parts as well
        const int32_t ps = q8_kv_->page_size();
        std::vector<int32_t> table_a, table_b;
        for (int32_t i = 0; i * ps < int32_t(a_ids.size()); ++i) table_a.push_back(i);
        for (int32_t i = 0; i * ps < int32_t(b_ids.size()); ++i) table_b.push_back(int32_t(table_a.size()) + i);
        arbor::ForwardBatch prefill;
        prefill.tokens = a_ids;
        prefill.sequences.push_back({0, int32_t(a_ids.size()), 0, table_a, arbor::SequenceRows::Logits::Last});
        std::vector<float> in_prefill, mixed_logits;
        q8_kv_->forward(prefill, in_prefill);

        arbor::ForwardBatch mixed;
        mixed.tokens = b_ids;
        mixed.tokens.push_back(a_ids.back());
        mixed.sequences.push_back({0, int32_t(b_ids.size()), 0, table_b, arbor::SequenceRows::Logits::Last});
        mixed.sequences.push_back({int32_t(b_ids.size()), 1, int32_t(a_ids.size()) - 1, table_a,
                                   arbor::SequenceRows::Logits::Last});
        q8_kv_->forward(mixed, mixed_logits);
        const size_t vocab = size_t(model_->config().n_vocab);
        QCOMPARE(mixed_logits.size(), 2 * vocab);
        QVERIFY(std::equal(in_prefill.begin(), in_prefill.end(), mixed_logits.begin() + ptrdiff_t(vocab)));
    }
};

QTEST_APPLESS_MAIN(TestQ8KvFidelity)
#include "test_q8_kv_fidelity.moc"
