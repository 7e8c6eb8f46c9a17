// Fidelity against an independent implementation: tests/data/fidelity holds prompts with
// llama.cpp's token ids, 64-token greedy continuations and top logits for the default
// model (see the README there for their origin). The reference ran with an F32 KV cache;
// Arbor is checked with that and with its default F16 cache, against the same bounds, and
// with the int8_activations option (8-bit activation codes, as llama.cpp's quantized
// products round them), whose fidelity is measured here against bounds of its own.
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

class TestFidelity : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;
    std::unique_ptr<arbor::Backend> f32_kv_, f16_kv_, int8_;
    QJsonArray prompts_;

    arbor::Backend& backend_for(const QString& kv) {
        return kv == "f32" ? *f32_kv_ : kv == "int8" ? *int8_ : *f16_kv_;
    }
    static void add_kv_rows() {
        QTest::addColumn<QString>("kv");
        QTest::newRow("F32 KV cache (as the reference)") << QString("f32");
        QTest::newRow("F16 KV cache (the default)") << QString("f16");
        QTest::newRow("int8 activations, F16 KV cache (an option)") << QString("int8");
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QFile f(QString::fromStdString((arbor::test::test_data_dir() / "fidelity" / "smollm2-135m-instruct-q4_1.json").string()));
        QVERIFY2(f.open(QIODevice::ReadOnly), "reference data file missing");
        const auto doc = QJsonDocument::fromJson(f.readAll());
        prompts_ = doc.object().value("prompts").toArray();
        QVERIFY2(prompts_.size() >= 16, "reference data needs at least 16 prompts");
        model_ = arbor::Model::load(arbor::test::model_path());
        arbor::BackendOptions options;
        options.kv_tokens = 4096;
        options.kv_type = arbor::KvType::F32;
        f32_kv_ = arbor::make_cpu_backend(*model_, options);
        options.kv_type = arbor::KvType::F16;
        f16_kv_ = arbor::make_cpu_backend(*model_, options);
        options.int8_activations = true;
        int8_ = arbor::make_cpu_backend(*model_, options);
    }

    // Our tokenizer gives the reference's prompt ids for every prompt.
    void promptTokenizationMatches() {
        const auto& tok = model_->tokenizer();
        for (const auto& p : prompts_) {
            const auto o = p.toObject();
            const auto ours = tok.encode(o.value("text").toString().toStdString(), tok.adds_bos(),
                                         o.value("parse_special").toBool());
            QVERIFY2(ours == ids_of(o.value("prompt_ids")), qPrintable("prompt " + o.value("name").toString()));
        }
    }

    // (a) Teacher-forced on the reference continuation, our argmax agrees at >= 98% of
    // positions (int8 activations: >= 95%; measured 97.2%, and 97.4% with the GGUF-order
    // Q8_1 products llama.cpp's rounding matches).
    void teacherForcedArgmaxAgreement_data() { add_kv_rows(); }
    void teacherForcedArgmaxAgreement() {
        QFETCH(QString, kv);
        arbor::Generator gen(*model_, backend_for(kv));
        const int32_t vocab = model_->config().n_vocab;
        int agree = 0, total = 0;
        for (const auto& p : prompts_) {
            const auto o = p.toObject();
            const auto prompt = ids_of(o.value("prompt_ids"));
            const auto cont = ids_of(o.value("greedy_ids"));
            std::vector<arbor::TokenId> seq = prompt;
            seq.insert(seq.end(), cont.begin(), cont.end() - 1);
            const auto logits = gen.logits_for_all(seq);
            int local = 0;
            for (size_t i = 0; i < cont.size(); ++i) {
                const size_t row = prompt.size() - 1 + i;
                local += argmax(&logits[row * size_t(vocab)], vocab) == cont[i];
            }
            qInfo("%-24s %2d/%zu positions agree", qPrintable(o.value("name").toString()), local, cont.size());
            agree += local;
            total += int(cont.size());
        }
        const double share = double(agree) / total;
        qInfo("argmax agreement: %d of %d (%.2f%%)", agree, total, 100.0 * share);
        const double bound = kv == "int8" ? 0.95 : 0.98;
        QVERIFY2(share >= bound, qPrintable(QString("agreement %1 below %2").arg(share).arg(bound)));
    }

    // (b) Free-running greedy decoding: the first 16 tokens are identical for >= 14 prompts
    // (int8 activations: >= 10; measured 12, and 7 with the GGUF-order Q8_1 products).
    void greedyPrefixesMatch_data() { add_kv_rows(); }
    void greedyPrefixesMatch() {
        QFETCH(QString, kv);
        arbor::Generator gen(*model_, backend_for(kv));
        arbor::GenerateOptions options;
        options.sampler.temperature = 0.0f;
        options.max_tokens = 16;
        options.stop_at_end_of_generation = false;
        int same = 0;
        for (const auto& p : prompts_) {
            const auto o = p.toObject();
            gen.reset();
            const auto result = gen.generate(ids_of(o.value("prompt_ids")), options);
            auto want = ids_of(o.value("greedy_ids"));
            want.resize(16);
            const bool ok = result.tokens == want;
            if (!ok) qInfo("greedy prefix differs for %s", qPrintable(o.value("name").toString()));
            same += ok;
        }
        qInfo("identical 16-token greedy prefixes: %d of %lld", same, static_cast<long long>(prompts_.size()));
        QVERIFY(same >= (kv == "int8" ? 10 : 14));
    }
};

QTEST_APPLESS_MAIN(TestFidelity)
#include "test_fidelity.moc"
