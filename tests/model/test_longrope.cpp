// Phi-3's LongRoPE on a tiny random-weight model (tests/data/synthetic, see the README
// there): per rotated pair, the frequency divided by the long factors when the context
// exceeds the original one, else by the short ones, and cos/sin times the file's
// attn_factor. llama.cpp's logits for a context of 256 (short factors) and of 1024 (long
// factors) over an original context of 512 are compared with Arbor's at the same context,
// alone and batched; the backend's and engine's choice of factors is checked, and
// Model::load's errors on copies broken in one way each.
#include "synthetic_model_files.h"

#include "arbor/engine.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

using arbor::test::Parts;
using arbor::test::synthetic_dir;

namespace {

// As the other F32 architectures (observed: see the test's output).
constexpr double kMaxAbsDiff = 1e-4;

const QString kFile = "phi3-longrope-tiny.gguf";
constexpr int32_t kOriginal = 512;  // the file's rope.scaling.original_context_length

} // namespace

class TestLongRope : public QObject {
    Q_OBJECT
    arbor::test::SyntheticModels models_;
    QTemporaryDir tmp_;
    QJsonObject short_, long_;  // the references at a context of 256 and of 1024

    const arbor::Model& model() { return models_.model(kFile); }
    std::filesystem::path temp_file(const char* name) const {
        return std::filesystem::path(tmp_.path().toStdString()) / name;
    }

    // The model with `edit` applied to its parts, loaded.
    std::unique_ptr<arbor::Model> edited(const std::function<void(Parts&)>& edit) {
        return arbor::test::edited_model(kFile, temp_file("edited.gguf"), edit);
    }

    static bool long_factors_at(const arbor::Model& m, int32_t kv_tokens, int32_t context_tokens = 0) {
        arbor::BackendOptions options;
        options.kv_tokens = kv_tokens;
        options.context_tokens = context_tokens;
        options.threads = 1;
        return arbor::make_cpu_backend(m, options)->rope_long_factors();
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY2(models_.add_references("reference-phi3-longrope.json"),
                 "tests/data/synthetic/reference-phi3-longrope.json missing");
        for (const auto& r : models_.references()) {
            const QJsonObject ref = r.toObject();
            (arbor::test::reference_context(ref) > kOriginal ? long_ : short_) = ref;
        }
        QCOMPARE(arbor::test::reference_context(short_), 256);
        QCOMPARE(arbor::test::reference_context(long_), 1024);
    }

    void filesMatchReference() {
        const QString changed = models_.changed_file();
        QVERIFY2(changed.isEmpty(), qPrintable(changed + " is not the file its reference was computed on"));
    }

    // The tables: base^(-2i/24) over the short or the long factor of pair i, cos/sin
    // times sqrt(1 + ln(4096 / 512) / ln 512) (the converter's attn_factor, read from the file).
    void configuration() {
        const arbor::Model& m = model();
        const arbor::ModelConfig& c = m.config();
        QCOMPARE(c.architecture, std::string("phi3"));
        QCOMPARE(c.n_rot, 24);
        QCOMPARE(c.rope_long_orig_ctx, kOriginal);
        QCOMPARE(c.n_ctx_train, 4096);
        const auto& w = m.weights();
        QCOMPARE(w.rope_factors_long.size(), size_t(12));
        QCOMPARE(w.rope_factors_short.size(), size_t(12));
        QVERIFY(w.rope_freq_factors.empty());
        for (size_t i = 0; i < 12; ++i) {
            const double base = std::pow(1e4, -2.0 * double(i) / 24);
            QCOMPARE(m.rope_inv_freq(false, false)[i], float(base / w.rope_factors_short[i]));
            QCOMPARE(m.rope_inv_freq(false, true)[i], float(base / w.rope_factors_long[i]));
            // The synthetic factors: long in 1..15, short in 1..2.
            QVERIFY(w.rope_factors_long[i] >= 1.0f && w.rope_factors_long[i] < 15.0f);
            QVERIFY(w.rope_factors_short[i] >= 1.0f && w.rope_factors_short[i] < 2.0f);
        }
        QCOMPARE(m.rope_mscale(), float(std::sqrt(1.0 + std::log(8.0) / std::log(512.0))));
        QVERIFY(!m.rope_long_factors(kOriginal));
        QVERIFY(m.rope_long_factors(kOriginal + 1));
        float table[24];
        m.rope_table(39, table, false, true);
        QCOMPARE(table[2], float(std::cos(39.0 * double(m.rope_inv_freq(false, true)[1])) * m.rope_mscale()));
        // Models without LongRoPE never take long factors.
        QVERIFY(!models_.model("phi3-tiny.gguf").rope_long_factors(1 << 20));
    }

    // llama.cpp's rule on the context the backend runs: its pool, bounded by
    // context_tokens and the trained context, against the original context.
    void backendChoosesByContext_data() {
        QTest::addColumn<int>("kv_tokens");
        QTest::addColumn<int>("context_tokens");
        QTest::addColumn<bool>("long_factors");
        QTest::newRow("pool of 256") << 256 << 0 << false;
        QTest::newRow("pool of 512 (the original context)") << 512 << 0 << false;
        QTest::newRow("pool of 528") << 528 << 0 << true;
        QTest::newRow("pool of 8192, context 512") << 8192 << 512 << false;
        QTest::newRow("pool of 8192, context 513") << 8192 << 513 << true;
        QTest::newRow("pool of 256, context 4096") << 256 << 4096 << false;
    }

    void backendChoosesByContext() {
        QFETCH(int, kv_tokens);
        QFETCH(int, context_tokens);
        QFETCH(bool, long_factors);
        QCOMPARE(long_factors_at(model(), kv_tokens, context_tokens), long_factors);
    }

    // The engine gives its backend its context, so both agree; on a lent backend with the
    // short factors it accepts no sequence beyond the original context.
    void engineContextMatchesFactors() {
        const arbor::Model& m = model();
        arbor::EngineOptions options;
        options.backend.kv_tokens = 2048;
        options.backend.threads = 1;
        options.context_tokens = 400;
        {
            arbor::Engine engine(m, options);
            QCOMPARE(engine.context_size(), 400);
        }
        options.context_tokens = 1000;
        {
            arbor::Engine engine(m, options);
            QCOMPARE(engine.context_size(), 1000);
        }
        arbor::BackendOptions lent;
        lent.kv_tokens = 2048;
        lent.context_tokens = 300;
        lent.threads = 1;
        auto backend = arbor::make_cpu_backend(m, lent);
        QVERIFY(!backend->rope_long_factors());
        arbor::EngineOptions on_lent;
        arbor::Engine engine(m, *backend, on_lent);
        QCOMPARE(engine.context_size(), kOriginal);
    }

    // Each reference's cases, whole and in chunks of 7, also with attention in parts of 5.
    void logitsMatchReference_data() {
        QTest::addColumn<bool>("long_context");
        QTest::addColumn<int>("attention_part");
        for (bool long_context : {false, true})
            for (int part : {0, 5})
                QTest::newRow(qPrintable(QString("%1 factors, parts %2").arg(long_context ? "long" : "short").arg(part)))
                    << long_context << part;
    }

    void logitsMatchReference() {
        QFETCH(bool, long_context);
        QFETCH(int, attention_part);
        const arbor::test::ReferenceDiff d =
            arbor::test::diff_from_reference(model(), long_context ? long_ : short_, kMaxAbsDiff, attention_part);
        QVERIFY2(d.failure.isEmpty(), qPrintable(d.failure));
        qInfo("max abs diff %.3g", d.worst);
    }

    void batchedRowsMatchReference_data() {
        QTest::addColumn<bool>("long_context");
        QTest::newRow("short factors") << false;
        QTest::newRow("long factors") << true;
    }

    void batchedRowsMatchReference() {
        QFETCH(bool, long_context);
        const QString failure = arbor::test::batched_failure(model(), long_context ? long_ : short_, kMaxAbsDiff);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // What the references tell apart: each factor set is needed for its context, and the
    // attention factor for both (the 40-id case, F32 KV).
    void eachPartMatters_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<bool>("long_context");
        QTest::newRow("short context on the long factors") << "short-as-long" << false;
        QTest::newRow("long context on the short factors") << "long-as-short" << true;
        QTest::newRow("short context, no factors") << "drop:rope_factors_short.weight" << false;
        QTest::newRow("long context, no factors") << "drop:rope_factors_long.weight" << true;
        QTest::newRow("short context, no attention factor") << "erase:phi3.rope.scaling.attn_factor" << false;
        QTest::newRow("long context, no attention factor") << "erase:phi3.rope.scaling.attn_factor" << true;
    }

    void eachPartMatters() {
        QFETCH(QString, edit);
        QFETCH(bool, long_context);
        const auto m = edited([&](Parts& p) {
            if (edit == "short-as-long" || edit == "long-as-short") {
                // The other set's values under this set's name.
                const bool to_long = edit == "short-as-long";
                p.tensor(to_long ? "rope_factors_short.weight" : "rope_factors_long.weight").data =
                    p.tensor(to_long ? "rope_factors_long.weight" : "rope_factors_short.weight").data;
            } else {
                arbor::test::apply_edit(p, edit);
            }
        });
        const double diff = arbor::test::last_case_diff(*m, long_context ? long_ : short_);
        QVERIFY2(diff > 0.01, qPrintable(QString("max abs diff with the change only %1").arg(diff)));
        qInfo("max abs diff %.3g", diff);
    }

    // The rewriting itself keeps the model's logits, so the differences above come from
    // the one edit each.
    void unchangedCopyMatches() {
        const auto m = edited([](Parts&) {});
        QVERIFY(arbor::test::last_case_diff(*m, short_) < kMaxAbsDiff);
        QVERIFY(arbor::test::last_case_diff(*m, long_) < kMaxAbsDiff);
    }

    void loadErrors_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("half the long factors") << "halve:rope_factors_long.weight"
                                               << QStringList{"'rope_factors_long.weight'", "shape [6]", "expected [12]"};
        QTest::newRow("a zero short factor") << "zero-factor"
                                             << QStringList{"'rope_factors_short.weight' holds 0", "positive and finite"};
        QTest::newRow("a NaN long factor") << "nan-factor"
                                           << QStringList{"'rope_factors_long.weight' holds nan", "positive and finite"};
        QTest::newRow("factors per layer") << "per-layer"
                                           << QStringList{"LongRoPE factors per layer", "blk.0.rope_factors_long.weight"};
        QTest::newRow("rope_freqs beside") << "rope-freqs" << QStringList{"both LongRoPE factors and rope_freqs.weight"};
        QTest::newRow("original context 0") << "u32:phi3.rope.scaling.original_context_length=0"
                                            << QStringList{"original_context_length", "invalid value 0"};
        QTest::newRow("attention factor 0") << "f32:phi3.rope.scaling.attn_factor=0"
                                            << QStringList{"invalid rope.scaling.attn_factor"};
    }

    void loadErrors() {
        QFETCH(QString, edit);
        QFETCH(QStringList, words);
        Parts p = Parts::read(synthetic_dir() / kFile.toStdString());
        const auto set_float = [&](const char* tensor, size_t index, float value) {
            std::memcpy(p.tensor(tensor).data.data() + 4 * index, &value, sizeof value);
        };
        if (edit == "zero-factor") {
            set_float("rope_factors_short.weight", 3, 0.0f);
        } else if (edit == "nan-factor") {
            set_float("rope_factors_long.weight", 11, NAN);
        } else if (edit == "per-layer") {
            arbor::test::TestTensor t = p.tensor("rope_factors_long.weight");
            t.name = "blk.0.rope_factors_long.weight";
            p.tensors.push_back(std::move(t));
        } else if (edit == "rope-freqs") {
            arbor::test::TestTensor t = p.tensor("rope_factors_long.weight");
            t.name = "rope_freqs.weight";
            p.tensors.push_back(std::move(t));
        } else {
            try {
                arbor::test::apply_edit(p, edit);
            } catch (const std::exception& e) {
                QFAIL(e.what());
            }
        }
        const QString failure = arbor::test::load_error_lacking(p, temp_file("broken.gguf"), words);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }
};

QTEST_APPLESS_MAIN(TestLongRope)
#include "test_longrope.moc"
