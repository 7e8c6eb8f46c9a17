// The gpt-oss architecture (llama.cpp's openai-moe) on tiny random-weight models
// (tests/data/synthetic, see the README there): Q/K/V and output biases, learned attention
// sinks, sliding-window attention on the even layers, YaRN RoPE on every layer, a biased
// router taking the top logits with a softmax over the chosen, biased experts with the
// clamped SwiGLU; one model F32 throughout, one with MXFP4 experts. Last-position logits
// are compared with llama.cpp's, alone, with attention split into parts and batched;
// Model::load's errors are checked on copies broken in one way each.
#include "synthetic_model_files.h"

#include "arbor/kernels/dtype.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

using arbor::test::Parts;
using arbor::test::synthetic_dir;

namespace {

// As the other F32 architectures (observed: see the test's output); the MXFP4 experts'
// float products (panels off) keep it too.
constexpr double kMaxAbsDiff = 1e-4;
// The MXFP4 experts on panels (the default): their activations rounded to 16 bits per
// block (panel_weights.h) move the logits further (observed 3.9e-4), as the quantized
// llama file of test_architectures.
constexpr double kMaxAbsDiffPanels = 1e-3;

const QString kF32 = "gpt-oss-tiny.gguf";
const QString kMxfp4 = "gpt-oss-mxfp4-tiny.gguf";

} // namespace

class TestGptOss : public QObject {
    Q_OBJECT
    arbor::test::SyntheticModels models_;
    QTemporaryDir tmp_;

    const arbor::Model& model(const QString& file) { return models_.model(file); }
    QJsonObject reference(const QString& file) const { return models_.reference(file); }
    std::filesystem::path temp_file(const char* name) const {
        return std::filesystem::path(tmp_.path().toStdString()) / name;
    }

    // The F32 model with `edit` applied (Parts' edits, or a function of the parts), loaded.
    std::unique_ptr<arbor::Model> edited(const std::function<void(Parts&)>& edit) {
        return arbor::test::edited_model(kF32, temp_file("edited.gguf"), edit);
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        QVERIFY2(models_.add_references("reference-gpt-oss.json"), "tests/data/synthetic/reference-gpt-oss.json missing");
        QCOMPARE(models_.references().size(), 2);
    }

    void filesMatchReference() {
        const QString changed = models_.changed_file();
        QVERIFY2(changed.isEmpty(), qPrintable(changed + " is not the file its reference was computed on"));
    }

    void configuration() {
        const auto& m = model(kF32);
        const arbor::ModelConfig& c = m.config();
        QCOMPARE(c.architecture, std::string("gpt-oss"));
        QVERIFY(c.rope_neox);
        QCOMPARE(c.n_layer, 4);
        QCOMPARE(c.sliding_window, 8);
        // llama.cpp's default period 2: even layers slide, odd layers are global.
        QVERIFY((c.local_layers == std::vector<bool>{true, false, true, false}));
        QVERIFY(c.rope_yarn);
        QVERIFY(c.rope_scaled_local);
        QCOMPARE(c.rope_base_local, c.rope_base);
        // The local layers rotate exactly as the global ones (same base, same YaRN).
        QVERIFY(m.rope_inv_freq(true) == m.rope_inv_freq(false));
        QCOMPARE(m.rope_mscale(true), m.rope_mscale(false));
        QVERIFY(m.rope_mscale(false) != 1.0f);
        QVERIFY(c.attn_sinks);
        QCOMPARE(c.n_expert, 8);
        QCOMPARE(c.n_expert_used, 2);
        QCOMPARE(c.n_ff_exp, 32);
        QVERIFY(c.expert_gating == arbor::ModelConfig::Gating::SoftmaxChosen);
        QVERIFY(c.ffn_activation == arbor::ModelConfig::Activation::SwigluOai);
        const arbor::LayerWeights& l = m.weights().layers[3];
        QCOMPARE(l.attn_sinks.size(), size_t(4));
        QCOMPARE(l.bo.size(), size_t(64));
        QCOMPARE(l.bq.size(), size_t(128));
        QCOMPARE(l.bk.size(), size_t(64));
        QCOMPARE(l.ffn_gate_inp_b.size(), size_t(8));
        QCOMPARE(l.gate_exps_b.size(), size_t(32 * 8));
        QCOMPARE(l.up_exps_b.size(), size_t(32 * 8));
        QCOMPARE(l.down_exps_b.size(), size_t(64 * 8));
        QVERIFY(l.attn_post_norm.empty() && l.ffn_post_norm.empty());
        QVERIFY(m.weights().output.data != m.weights().token_embd.data);

        const arbor::LayerWeights& q = model(kMxfp4).weights().layers[0];
        for (const arbor::TensorView* t : {&q.gate_exps, &q.up_exps, &q.down_exps}) QVERIFY(t->type == arbor::DType::MXFP4);
        QVERIFY(q.wq.type == arbor::DType::F32);
        // The qwen3moe path keeps its own gating.
        QVERIFY(model("qwen3moe-tiny.gguf").config().expert_gating == arbor::ModelConfig::Gating::SoftmaxAll);
    }

    // Each model's reference cases, whole and in chunks; then with attention split into
    // parts of 16 and 5 positions (the sink joins the parts' merge instead of a part). The
    // MXFP4 model with its experts' float products and on panels.
    void logitsMatchReference_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("attention_part");
        QTest::addColumn<bool>("panels");
        for (const QString& file : {kF32, kMxfp4})
            for (bool panels : {false, true}) {
                if (file == kF32 && panels) continue;  // F32 matrices have no panels
                for (int part : {0, 16, 5})
                    QTest::newRow(qPrintable(QString("%1, parts %2%3").arg(file).arg(part).arg(panels ? ", panels" : "")))
                        << file << part << panels;
            }
    }

    void logitsMatchReference() {
        QFETCH(QString, file);
        QFETCH(int, attention_part);
        QFETCH(bool, panels);
        const arbor::test::ReferenceDiff d = arbor::test::diff_from_reference(
            model(file), reference(file), panels ? kMaxAbsDiffPanels : kMaxAbsDiff, attention_part, panels);
        QVERIFY2(d.failure.isEmpty(), qPrintable(d.failure));
        qInfo("max abs diff %.3g", d.worst);
    }

    void batchedRowsMatchReference_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("panels");
        QTest::newRow("f32") << kF32 << false;
        QTest::newRow("mxfp4 experts") << kMxfp4 << false;
        QTest::newRow("mxfp4 experts on panels") << kMxfp4 << true;
    }

    void batchedRowsMatchReference() {
        QFETCH(QString, file);
        QFETCH(bool, panels);
        const QString failure = arbor::test::batched_failure(model(file), reference(file),
                                                             panels ? kMaxAbsDiffPanels : kMaxAbsDiff, panels);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // The default backend packs the MXFP4 experts as panels: its logits are not the float
    // products' (the same bits would mean the experts still take the float path).
    void mxfp4ExpertsTakePanels() {
        const QJsonObject c = reference(kMxfp4).value("cases").toArray().last().toObject();
        std::vector<float> logits[2];
        for (bool panels : {false, true}) {
            arbor::BackendOptions options;
            options.kv_tokens = 256;
            options.kv_type = arbor::KvType::F32;
            options.panel_weights = panels;
            auto backend = arbor::make_cpu_backend(model(kMxfp4), options);
            arbor::Generator gen(model(kMxfp4), *backend, 512);
            logits[panels] = gen.prefill(arbor::test::ids_of(c.value("ids")));
        }
        QCOMPARE(logits[0].size(), logits[1].size());
        QVERIFY(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)) != 0);
    }

    void loadErrors_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("no sinks") << "drop:blk.1.attn_sinks.weight" << QStringList{"missing tensor 'blk.1.attn_sinks.weight'"};
        QTest::newRow("half the sinks") << "halve:blk.0.attn_sinks.weight"
                                        << QStringList{"'blk.0.attn_sinks.weight'", "shape [2]", "expected [4]"};
        QTest::newRow("no output bias") << "drop:blk.2.attn_output.bias" << QStringList{"missing tensor 'blk.2.attn_output.bias'"};
        QTest::newRow("no router bias") << "drop:blk.0.ffn_gate_inp.bias" << QStringList{"missing tensor 'blk.0.ffn_gate_inp.bias'"};
        QTest::newRow("no gate experts' bias") << "drop:blk.3.ffn_gate_exps.bias"
                                               << QStringList{"missing tensor 'blk.3.ffn_gate_exps.bias'"};
        QTest::newRow("half the down experts' biases") << "halve:blk.1.ffn_down_exps.bias"
                                                       << QStringList{"'blk.1.ffn_down_exps.bias'", "shape [64, 4]", "expected [64, 8]"};
        QTest::newRow("up experts' bias as a vector") << "transpose:blk.0.ffn_up_exps.bias"
                                                      << QStringList{"'blk.0.ffn_up_exps.bias'", "expected [32, 8]"};
        QTest::newRow("no FFN norm") << "drop:blk.0.post_attention_norm.weight"
                                     << QStringList{"missing tensor 'blk.0.post_attention_norm.weight'"};
        QTest::newRow("no output (no tied variant)") << "drop:output.weight" << QStringList{"missing tensor 'output.weight'"};
        QTest::newRow("no sliding window") << "erase:gpt-oss.attention.sliding_window"
                                           << QStringList{"lacks 'gpt-oss.attention.sliding_window'"};
        QTest::newRow("zero sliding window") << "u32:gpt-oss.attention.sliding_window=0"
                                             << QStringList{"'gpt-oss.attention.sliding_window'", "invalid value 0"};
        QTest::newRow("window flags for 3 of 4 layers") << "pattern:3"
                                                        << QStringList{"sliding_window_pattern", "3 entries for 4 layers"};
        QTest::newRow("negative local RoPE base") << "f32:gpt-oss.rope.freq_base_swa=-1"
                                                  << QStringList{"invalid rope.freq_base_swa"};
        QTest::newRow("scaled expert weights") << "f32:gpt-oss.expert_weights_scale=2.5"
                                               << QStringList{"expert_weights_scale", "not supported for gpt-oss"};
        QTest::newRow("more experts than stacked") << "u32:gpt-oss.expert_count=16"
                                                   << QStringList{"'blk.0.ffn_gate_inp.weight'", "expected [64, 16]"};
        QTest::newRow("more used than there are") << "u32:gpt-oss.expert_used_count=9"
                                                  << QStringList{"expert_used_count 9 exceeds expert_count 8"};
        QTest::newRow("shared experts") << "u32:gpt-oss.expert_shared_count=1"
                                        << QStringList{"shared experts", "not supported for gpt-oss"};
        QTest::newRow("partial rotary") << "u32:gpt-oss.rope.dimension_count=16"
                                        << QStringList{"partial or odd rotary dimensions", "gpt-oss"};
        QTest::newRow("per-layer expert widths") << "widths-array"
                                                 << QStringList{"per-layer expert widths", "expert_feed_forward_length"};
        QTest::newRow("sinks not finite") << "nan-sink" << QStringList{"'blk.2.attn_sinks.weight'", "not finite"};
    }

    void loadErrors() {
        QFETCH(QString, edit);
        QFETCH(QStringList, words);
        Parts p = Parts::read(synthetic_dir() / kF32.toStdString());
        if (edit == "nan-sink") {
            const float nan = NAN;
            std::memcpy(p.tensor("blk.2.attn_sinks.weight").data.data() + 4, &nan, sizeof nan);
        } else if (edit == "widths-array") {
            const std::vector<arbor::GgufValue> widths(4, arbor::test::gv::u32(32));
            p.set("gpt-oss.expert_feed_forward_length", arbor::test::gv::arr(arbor::GgufType::Uint32, widths));
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

    // Each feature the reference covers changes its logits when the file asks for less:
    // sinks far below every score (as if there were none), every layer global (window
    // pattern period 1), the local layers on another RoPE base, one expert per token.
    // The 40-id case reaches past the window of 8.
    void featureMatters_data() {
        QTest::addColumn<QString>("edit");
        QTest::newRow("sinks at -1e30") << "no-sinks";
        QTest::newRow("every layer global") << "u32:gpt-oss.attention.sliding_window_pattern=1";
        QTest::newRow("odd layers local") << "odd-local";
        QTest::newRow("local RoPE base 1e6") << "f32:gpt-oss.rope.freq_base_swa=1000000";
        QTest::newRow("one expert per token") << "u32:gpt-oss.expert_used_count=1";
    }

    void featureMatters() {
        QFETCH(QString, edit);
        const auto m = edited([&](Parts& p) {
            if (edit == "no-sinks") {
                for (auto& t : p.tensors) {
                    if (!t.name.ends_with("attn_sinks.weight")) continue;
                    for (size_t i = 0; i + 4 <= t.data.size(); i += 4) {
                        const float low = -1e30f;
                        std::memcpy(t.data.data() + i, &low, sizeof low);
                    }
                }
            } else if (edit == "odd-local") {
                std::vector<arbor::GgufValue> flags;
                for (bool local : {false, true, false, true}) flags.push_back(arbor::test::gv::boolean(local));
                p.set("gpt-oss.attention.sliding_window_pattern", arbor::test::gv::arr(arbor::GgufType::Bool, flags));
            } else {
                arbor::test::apply_edit(p, edit);
            }
        });
        const double diff = arbor::test::last_case_diff(*m, reference(kF32));
        QVERIFY2(diff > 0.01, qPrintable(QString("max abs diff without the feature only %1").arg(diff)));
        qInfo("max abs diff %.3g", diff);
    }

    // The rewriting itself keeps the model's logits, so the differences above come from
    // the one edit each.
    void unchangedCopyMatches() {
        const auto m = edited([](Parts&) {});
        QCOMPARE(arbor::test::last_case_diff(*m, reference(kF32)) < kMaxAbsDiff, true);
    }
};

QTEST_APPLESS_MAIN(TestGptOss)
#include "test_gpt_oss.moc"
