// Architecture coverage on tiny random-weight models (tests/data/synthetic, see the README
// there): qwen2 (QKV bias, NEOX RoPE), llama with llama3-style rope_freqs and most weight
// types, llama with linear RoPE scaling, qwen3 (Q/K norms) and gemma3 (Q/K norms,
// post-norms, GELU, scaled embedding, sliding-window layers with their own RoPE base),
// smollm3 (every fourth layer without RoPE), qwen3 with YaRN RoPE scaling, phi3 (fused
// QKV and gate/up, partial rotary), qwen3moe (routed experts) and mistral3 (YaRN with a log
// multiplier, attention temperature).
// Last-position logits are compared with llama.cpp's. Model::load's errors are checked on
// copies of a model broken in one way each.
#include "synthetic_model_files.h"

#include "arbor/generator.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

using arbor::TokenId;
using arbor::test::argmax;
using arbor::test::ids_of;
using arbor::test::Parts;
using arbor::test::synthetic_dir;

namespace {

// F32 models match llama.cpp to a few 1e-6; the quantized one's products differ in
// summation order over dequantized blocks (observed 1.9e-4).
constexpr double kMaxAbsDiff = 1e-4;
constexpr double kMaxAbsDiffQuantized = 1e-3;

} // namespace

class TestArchitectures : public QObject {
    Q_OBJECT
    arbor::test::SyntheticModels models_;
    QTemporaryDir tmp_;

    const arbor::Model& model(const QString& file) { return models_.model(file); }
    QJsonObject reference(const QString& file) const { return models_.reference(file); }
    // Prefills every reference case (whole, and in chunks of 7 across KV pages) and
    // compares the last-position logits; returns the largest difference seen.
    // attention_part > 0 splits each row's attention into parts of that many positions.
    double compare_with_reference(const arbor::Model& m, const QJsonObject& ref, const char* what,
                                  int32_t attention_part = 0) {
        const double tolerance =
            ref.value("file").toString() == "llama-ropefreqs-quant.gguf" ? kMaxAbsDiffQuantized : kMaxAbsDiff;
        const arbor::test::ReferenceDiff d = arbor::test::diff_from_reference(m, ref, tolerance, attention_part);
        if (!d.failure.isEmpty())
            QTest::qFail(qPrintable(QString("%1, %2").arg(what, d.failure)), __FILE__, __LINE__);
        return d.failure.isEmpty() ? d.worst : INFINITY;
    }

    // The largest logit difference from the reference of `file`'s longest case.
    double last_case_diff(const arbor::Model& m, const QString& file) {
        return arbor::test::last_case_diff(m, reference(file));
    }

    static void apply_edit(Parts& p, const QString& edit) {
        try {
            arbor::test::apply_edit(p, edit);
        } catch (const std::exception& e) {
            QFAIL(e.what());
        }
    }

    // Writes the broken model and checks that loading it fails with all of `words`.
    void expect_load_error(const Parts& p, const QStringList& words) {
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "broken.gguf";
        const QString failure = arbor::test::load_error_lacking(p, path, words);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

private slots:
    void initTestCase() {
        QVERIFY(tmp_.isValid());
        for (const char* name : {"reference.json", "reference-qwen3-gemma3.json", "reference-smollm3-yarn.json",
                                 "reference-phi3.json", "reference-qwen3moe.json", "reference-mistral3.json"})
            QVERIFY2(models_.add_references(name), qPrintable(QString("tests/data/synthetic/%1 missing or empty").arg(name)));
        QCOMPARE(models_.references().size(), 10);
    }

    // The model files are the ones the reference was computed on.
    void filesMatchReference() {
        const QString changed = models_.changed_file();
        QVERIFY2(changed.isEmpty(), qPrintable(changed + " is not the file its reference was computed on"));
    }

    void configuration() {
        const auto& qwen = model("qwen2-tiny.gguf");
        QCOMPARE(qwen.config().architecture, std::string("qwen2"));
        QVERIFY(qwen.config().rope_neox);
        QCOMPARE(qwen.weights().layers[1].bk.size(), size_t(32));
        QVERIFY(qwen.weights().output.data != qwen.weights().token_embd.data);

        const auto& freqs = model("llama-ropefreqs-quant.gguf");
        QVERIFY(!freqs.config().rope_neox);
        QCOMPARE(freqs.config().head_dim, 32);
        QCOMPARE(freqs.config().n_head_kv, 2);
        QCOMPARE(freqs.weights().rope_freq_factors.size(), size_t(16));
        QCOMPARE(freqs.weights().rope_freq_factors[3], 8.0f);
        QVERIFY(freqs.weights().layers[0].bq.empty());
        QCOMPARE(freqs.weights().output.type, arbor::DType::Q6_K);

        const auto& linear = model("llama-linear-rope.gguf");
        QCOMPARE(linear.config().rope_freq_scale, 0.25f);
        QVERIFY(linear.weights().output.data == linear.weights().token_embd.data);
        QVERIFY(linear.config().local_layers.empty());
        QVERIFY(linear.weights().layers[0].attn_q_norm.empty());

        const auto& qwen3 = model("qwen3-tiny.gguf");
        QCOMPARE(qwen3.config().architecture, std::string("qwen3"));
        QVERIFY(qwen3.config().rope_neox);
        QCOMPARE(qwen3.config().head_dim, 32);
        QCOMPARE(qwen3.weights().layers[1].attn_q_norm.size(), size_t(32));
        QCOMPARE(qwen3.weights().layers[1].attn_k_norm.size(), size_t(32));
        QVERIFY(qwen3.weights().layers[1].bq.empty());
        QVERIFY(qwen3.weights().layers[1].attn_post_norm.empty());
        QVERIFY(qwen3.config().ffn_activation == arbor::ModelConfig::Activation::Silu);

        const auto& gemma = model("gemma3-tiny.gguf");
        const arbor::ModelConfig& g = gemma.config();
        QCOMPARE(g.architecture, std::string("gemma3"));
        QVERIFY(g.rope_neox);
        QCOMPARE(g.embd_scale, 8.0f);
        QVERIFY(g.ffn_activation == arbor::ModelConfig::Activation::GeluTanh);
        QCOMPARE(g.sliding_window, 8);
        QVERIFY((g.local_layers == std::vector<bool>{true, true, true, true, true, false}));
        QCOMPARE(g.rope_base, 1e6f);
        QCOMPARE(g.rope_base_local, 10000.0f);
        QCOMPARE(g.rope_freq_scale, 0.125f);
        QCOMPARE(g.query_scale(), 1.0f / std::sqrt(32.0f));
        QCOMPARE(gemma.rope_inv_freq(true)[1], float(std::pow(10000.0, -2.0 / 32)));
        QCOMPARE(gemma.rope_inv_freq(false)[1], float(std::pow(1e6, -2.0 / 32) * 0.125));
        QCOMPARE(gemma.weights().layers[5].attn_post_norm.size(), size_t(64));
        QCOMPARE(gemma.weights().layers[5].ffn_post_norm.size(), size_t(64));
        QVERIFY(gemma.weights().output.data == gemma.weights().token_embd.data);

        const arbor::ModelConfig& smol = model("smollm3-tiny.gguf").config();
        QCOMPARE(smol.architecture, std::string("smollm3"));
        QVERIFY(!smol.rope_neox);
        QCOMPARE(smol.no_rope_interval, 4);
        for (int32_t l = 0; l < 5; ++l) QCOMPARE(smol.uses_rope(l), l != 3);
        QCOMPARE(model("smollm3-tiny.gguf").rope_mscale(), 1.0f);

        // YaRN by 4 over 4096 trained positions at base 1e4, head size 32: the ramp runs
        // from pair floor(32 ln(4096 / (32 * 2 pi)) / (2 ln 1e4)) = 5 (beta_fast 32) to
        // ceil(32 ln(4096 / (2 pi)) / (2 ln 1e4)) = 12 (beta_slow 1); pairs below keep
        // their frequency, pairs above are scaled by 1/4, cos/sin grow by 1 + 0.1 ln 4.
        const auto& yarn = model("qwen3-yarn-tiny.gguf");
        QVERIFY(yarn.config().rope_yarn);
        QCOMPARE(yarn.config().rope_yarn_orig_ctx, 4096);
        QCOMPARE(yarn.config().n_ctx_train, 16384);
        QCOMPARE(yarn.config().rope_freq_scale, 0.25f);
        QCOMPARE(yarn.rope_mscale(), float(1.0 + 0.1 * std::log(4.0)));
        const auto base = [](int i) { return std::pow(1e4, -2.0 * i / 32); };
        for (int i = 0; i <= 5; ++i) QCOMPARE(yarn.rope_inv_freq()[size_t(i)], float(base(i)));
        const double mix8 = 1.0 - 3.0 / 7.0;  // pair 8: three of the ramp's seven steps
        QCOMPARE(yarn.rope_inv_freq()[8], float(base(8) * (0.25 * (1.0 - mix8) + mix8)));
        for (int i = 12; i < 16; ++i) QCOMPARE(yarn.rope_inv_freq()[size_t(i)], float(base(i) * 0.25));

        // Phi-3: the fused tensors' parts are consecutive rows; 24 of 32 dimensions rotate.
        const auto& phi3 = model("phi3-tiny.gguf");
        const arbor::LayerWeights& l1 = phi3.weights().layers[1];
        QVERIFY(phi3.config().rope_neox);
        QCOMPARE(phi3.config().n_rot, 24);
        QCOMPARE(phi3.rope_inv_freq().size(), size_t(12));
        QCOMPARE(phi3.rope_inv_freq()[1], float(std::pow(1e4, -2.0 / 24)));
        QCOMPARE(l1.wq.rows, int64_t(128));
        QCOMPARE(l1.wk.rows, int64_t(64));
        QVERIFY(l1.wk.data == l1.wq.data + 128 * l1.wq.row_stride);
        QVERIFY(l1.wv.data == l1.wk.data + 64 * l1.wk.row_stride);
        QCOMPARE(l1.w_gate.rows, int64_t(128));
        QVERIFY(l1.w_up.data == l1.w_gate.data + 128 * l1.w_gate.row_stride);

        // Qwen3-MoE: 2 of 8 experts of width 32, stacked; no dense FFN.
        const auto& moe = model("qwen3moe-tiny.gguf");
        const arbor::ModelConfig& mc = moe.config();
        const arbor::LayerWeights& m1 = moe.weights().layers[1];
        QCOMPARE(mc.architecture, std::string("qwen3moe"));
        QVERIFY(mc.rope_neox);
        QCOMPARE(mc.n_expert, 8);
        QCOMPARE(mc.n_expert_used, 2);
        QCOMPARE(mc.n_ff_exp, 32);
        QCOMPARE(m1.attn_q_norm.size(), size_t(32));
        QVERIFY(m1.w_gate.empty() && m1.w_up.empty() && m1.w_down.empty());
        QCOMPARE(m1.ffn_gate_inp.rows, int64_t(8));
        QCOMPARE(m1.gate_exps.rows, int64_t(8 * 32));
        QCOMPARE(m1.down_exps.cols, int64_t(32));
        const arbor::TensorView down3 = arbor::expert_rows(m1.down_exps, mc.n_expert, 3);
        QCOMPARE(down3.rows, int64_t(64));
        QVERIFY(down3.data == m1.down_exps.data + 3 * 64 * m1.down_exps.row_stride);

        // Mistral 3: YaRN by 4 over 16 positions with log multiplier 1, so cos/sin keep
        // unit scale; queries at positions 16-31 grow by 1 + 0.1 ln 2, from 32 by 1 + 0.1 ln 3.
        const auto& mistral = model("mistral3-tiny.gguf");
        const arbor::ModelConfig& ms = mistral.config();
        QVERIFY(!ms.rope_neox);
        QVERIFY(ms.rope_yarn);
        QCOMPARE(ms.rope_yarn_orig_ctx, 16);
        QCOMPARE(ms.rope_yarn_log_mul, 1.0f);
        QCOMPARE(mistral.rope_mscale(), 1.0f);
        QCOMPARE(ms.attn_temp_floor, 16);
        QCOMPARE(ms.query_temperature(15), 1.0f);
        QCOMPARE(ms.query_temperature(16), float(1.0 + 0.1 * std::log(2.0)));
        QCOMPARE(ms.query_temperature(39), float(1.0 + 0.1 * std::log(3.0)));
    }

    void tokenizerMatchesReference() {
        for (const auto& r : models_.references()) {
            const auto o = r.toObject();
            const auto& tok = model(o.value("file").toString()).tokenizer();
            QCOMPARE(tok.n_vocab(), o.value("n_vocab").toInt());
            QVERIFY(tok.encode(o.value("text").toString().toStdString(), false, false) == ids_of(o.value("text_ids")));
        }
    }

    void logitsMatchReference_data() {
        QTest::addColumn<QString>("file");
        for (const auto& m : models_.references()) {
            const QString file = m.toObject().value("file").toString();
            QTest::newRow(qPrintable(file)) << file;
        }
    }

    void logitsMatchReference() {
        QFETCH(QString, file);
        const double worst = compare_with_reference(model(file), reference(file), qPrintable(file));
        if (QTest::currentTestFailed()) return;
        // Attention in parts of 8 positions, merged (a sliding window of 8 then starts
        // inside a part and leaves whole parts out).
        compare_with_reference(model(file), reference(file), qPrintable(file + " in parts"), 8);
        if (QTest::currentTestFailed()) return;
        qInfo("%s: max abs diff %.3g over %lld cases", qPrintable(file), worst,
              static_cast<long long>(reference(file).value("cases").toArray().size()));
    }

    // llama.cpp reads linear scaling from rope.scaling.factor when rope.scaling.type is
    // absent, and from the older key rope.scale_linear: both give the reference's logits.
    // Type "none" never scales.
    void linearScalingKeyVariants_data() {
        QTest::addColumn<QString>("variant");
        QTest::addColumn<float>("freq_scale");
        QTest::newRow("factor without type") << "no-type" << 0.25f;
        QTest::newRow("rope.scale_linear") << "scale-linear" << 0.25f;
        QTest::newRow("type none") << "none" << 1.0f;
    }

    void linearScalingKeyVariants() {
        QFETCH(QString, variant);
        QFETCH(float, freq_scale);
        Parts p = Parts::read(synthetic_dir() / "llama-linear-rope.gguf");
        p.erase_key("llama.rope.scaling.type");
        if (variant == "scale-linear") {
            p.erase_key("llama.rope.scaling.factor");
            p.set("llama.rope.scale_linear", arbor::test::gv::f32(4.0f));
        } else if (variant == "none") {
            p.set("llama.rope.scaling.type", arbor::test::gv::str("none"));
        }
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / (variant.toStdString() + ".gguf");
        p.write(path);
        const auto m = arbor::Model::load(path);
        QCOMPARE(m->config().rope_freq_scale, freq_scale);
        if (freq_scale != 1.0f) compare_with_reference(*m, reference("llama-linear-rope.gguf"), qPrintable(variant));
    }

    void loadErrors_data() {
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("arch gpt2") << "set:general.architecture=gpt2" << QStringList{"unsupported model architecture", "'gpt2'"};
        QTest::newRow("arch mamba") << "set:general.architecture=mamba" << QStringList{"unsupported model architecture", "'mamba'"};
        QTest::newRow("missing ffn_down") << "drop:blk.1.ffn_down.weight" << QStringList{"missing", "'blk.1.ffn_down.weight'"};
        QTest::newRow("missing output_norm") << "drop:output_norm.weight" << QStringList{"missing", "'output_norm.weight'"};
        QTest::newRow("missing token_embd") << "drop:token_embd.weight" << QStringList{"missing", "'token_embd.weight'"};
        QTest::newRow("transposed attn_k") << "transpose:blk.0.attn_k.weight" << QStringList{"'blk.0.attn_k.weight'", "shape"};
        QTest::newRow("transposed ffn_up") << "transpose:blk.1.ffn_up.weight" << QStringList{"'blk.1.ffn_up.weight'", "shape"};
        QTest::newRow("short q bias") << "halve:blk.1.attn_q.bias" << QStringList{"'blk.1.attn_q.bias'", "shape"};
        QTest::newRow("short output_norm") << "halve:output_norm.weight" << QStringList{"'output_norm.weight'", "shape"};
        QTest::newRow("output rows") << "halve:output.weight" << QStringList{"'output.weight'", "shape"};
        QTest::newRow("negative rope factor") << "f32:qwen2.rope.scaling.factor=-2" << QStringList{"RoPE scaling factor", "-2"};
    }

    void loadErrors() {
        QFETCH(QString, edit);
        QFETCH(QStringList, words);
        Parts p = Parts::read(synthetic_dir() / "qwen2-tiny.gguf");
        apply_edit(p, edit);
        expect_load_error(p, words);
    }

    // The new architectures' own tensors and keys, broken one at a time.
    void newArchitectureLoadErrors_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("edit");
        QTest::addColumn<QStringList>("words");
        QTest::newRow("qwen3 missing q norm") << "qwen3-tiny.gguf" << "drop:blk.1.attn_q_norm.weight"
                                              << QStringList{"missing", "'blk.1.attn_q_norm.weight'"};
        QTest::newRow("qwen3 short k norm") << "qwen3-tiny.gguf" << "halve:blk.0.attn_k_norm.weight"
                                            << QStringList{"'blk.0.attn_k_norm.weight'", "shape", "[16]", "[32]"};
        QTest::newRow("gemma3 missing post-attention norm")
            << "gemma3-tiny.gguf" << "drop:blk.5.post_attention_norm.weight"
            << QStringList{"missing", "'blk.5.post_attention_norm.weight'"};
        QTest::newRow("gemma3 missing post-FFN norm") << "gemma3-tiny.gguf" << "drop:blk.2.post_ffw_norm.weight"
                                                      << QStringList{"missing", "'blk.2.post_ffw_norm.weight'"};
        QTest::newRow("gemma3 missing k norm") << "gemma3-tiny.gguf" << "drop:blk.0.attn_k_norm.weight"
                                               << QStringList{"missing", "'blk.0.attn_k_norm.weight'"};
        QTest::newRow("gemma3 short post-FFN norm") << "gemma3-tiny.gguf" << "halve:blk.3.post_ffw_norm.weight"
                                                    << QStringList{"'blk.3.post_ffw_norm.weight'", "shape"};
        QTest::newRow("gemma3 pattern length") << "gemma3-tiny.gguf" << "pattern:4"
                                               << QStringList{"sliding_window_pattern", "4 entries", "6 layers"};
        QTest::newRow("gemma3 attention softcapping") << "gemma3-tiny.gguf" << "f32:gemma3.attn_logit_softcapping=50"
                                                      << QStringList{"attn_logit_softcapping", "not supported"};
        QTest::newRow("gemma3 yarn") << "gemma3-tiny.gguf" << "set:gemma3.rope.scaling.type=yarn"
                                     << QStringList{"YaRN", "not supported", "gemma3"};
        QTest::newRow("smollm3 missing q") << "smollm3-tiny.gguf" << "drop:blk.3.attn_q.weight"
                                           << QStringList{"missing", "'blk.3.attn_q.weight'"};
        QTest::newRow("smollm3 missing ffn_up") << "smollm3-tiny.gguf" << "drop:blk.4.ffn_up.weight"
                                                << QStringList{"missing", "'blk.4.ffn_up.weight'"};
        QTest::newRow("smollm3 transposed attn_output") << "smollm3-tiny.gguf" << "transpose:blk.2.attn_output.weight"
                                                        << QStringList{"'blk.2.attn_output.weight'", "shape"};
        QTest::newRow("smollm3 short attn_norm") << "smollm3-tiny.gguf" << "halve:blk.3.attn_norm.weight"
                                                 << QStringList{"'blk.3.attn_norm.weight'", "shape", "[32]", "[64]"};
        QTest::newRow("yarn original context 0") << "qwen3-yarn-tiny.gguf"
                                                 << "u32:qwen3.rope.scaling.original_context_length=0"
                                                 << QStringList{"original_context_length", "invalid value 0"};
        QTest::newRow("yarn negative attn_factor") << "qwen3-yarn-tiny.gguf" << "f32:qwen3.rope.scaling.attn_factor=-1"
                                                   << QStringList{"attn_factor", "-1"};
        QTest::newRow("phi3 missing qkv") << "phi3-tiny.gguf" << "drop:blk.1.attn_qkv.weight"
                                          << QStringList{"missing", "'blk.1.attn_q.weight'"};
        QTest::newRow("phi3 short qkv") << "phi3-tiny.gguf" << "halve:blk.0.attn_qkv.weight"
                                        << QStringList{"'blk.0.attn_qkv.weight'", "shape", "[128, 128]", "[128, 256]"};
        QTest::newRow("phi3 unfused gate/up") << "phi3-tiny.gguf" << "halve:blk.1.ffn_up.weight"
                                              << QStringList{"'blk.1.ffn_up.weight'", "shape", "[128, 256]"};
        QTest::newRow("phi3 odd rotary") << "phi3-tiny.gguf" << "u32:phi3.rope.dimension_count=23"
                                         << QStringList{"rotary dimensions (23 of head size 32)", "not supported"};
        QTest::newRow("phi3 rotary past head") << "phi3-tiny.gguf" << "u32:phi3.rope.dimension_count=40"
                                               << QStringList{"rotary dimensions (40 of head size 32)"};
        QTest::newRow("qwen3 partial rotary") << "qwen3-tiny.gguf" << "u32:qwen3.rope.dimension_count=16"
                                              << QStringList{"rotary dimensions (16 of head size 32)", "qwen3"};
        QTest::newRow("qwen3 LongRoPE factors") << "qwen3-tiny.gguf" << "longrope"
                                                << QStringList{"LongRoPE factors (rope_factors_long.weight)",
                                                               "only supported for phi3, not qwen3"};
        QTest::newRow("longrope") << "qwen3-yarn-tiny.gguf" << "set:qwen3.rope.scaling.type=longrope"
                                  << QStringList{"RoPE scaling type 'longrope'", "not supported"};
        const QString moe = "qwen3moe-tiny.gguf";
        QTest::newRow("qwen3moe missing router") << moe << "drop:blk.0.ffn_gate_inp.weight"
                                                 << QStringList{"missing", "'blk.0.ffn_gate_inp.weight'"};
        QTest::newRow("qwen3moe missing gate experts") << moe << "drop:blk.1.ffn_gate_exps.weight"
                                                       << QStringList{"missing", "'blk.1.ffn_gate_exps.weight'"};
        QTest::newRow("qwen3moe missing down experts") << moe << "drop:blk.0.ffn_down_exps.weight"
                                                       << QStringList{"missing", "'blk.0.ffn_down_exps.weight'"};
        QTest::newRow("qwen3moe missing k norm") << moe << "drop:blk.1.attn_k_norm.weight"
                                                 << QStringList{"missing", "'blk.1.attn_k_norm.weight'"};
        QTest::newRow("qwen3moe half the up experts") << moe << "halve:blk.0.ffn_up_exps.weight"
                                                      << QStringList{"'blk.0.ffn_up_exps.weight'", "[64, 32, 4]", "expected [64, 32, 8]"};
        QTest::newRow("qwen3moe experts as a matrix") << moe << "transpose:blk.1.ffn_down_exps.weight"
                                                      << QStringList{"'blk.1.ffn_down_exps.weight'", "[64, 32, 8]", "expected [32, 64, 8]"};
        QTest::newRow("qwen3moe more experts than stacked") << moe << "u32:qwen3moe.expert_count=16"
                                                            << QStringList{"'blk.0.ffn_gate_inp.weight'", "shape", "[64, 16]"};
        QTest::newRow("qwen3moe no expert count") << moe << "erase:qwen3moe.expert_count"
                                                  << QStringList{"lacks 'qwen3moe.expert_count'"};
        QTest::newRow("qwen3moe no experts used") << moe << "u32:qwen3moe.expert_used_count=0"
                                                  << QStringList{"'qwen3moe.expert_used_count'", "invalid value 0"};
        QTest::newRow("qwen3moe more used than there are") << moe << "u32:qwen3moe.expert_used_count=9"
                                                           << QStringList{"expert_used_count 9 exceeds expert_count 8"};
        QTest::newRow("qwen3moe past llama.cpp's expert limit") << moe << "u32:qwen3moe.expert_count=2000"
                                                                << QStringList{"expert_count 2000 exceeds 1024"};
        QTest::newRow("qwen3moe wider experts") << moe << "u32:qwen3moe.expert_feed_forward_length=64"
                                                << QStringList{"'blk.0.ffn_gate_exps.weight'", "expected [64, 64, 8]"};
        QTest::newRow("qwen3moe expert groups") << moe << "u32:qwen3moe.expert_group_count=2"
                                                << QStringList{"expert groups", "not supported"};
        QTest::newRow("qwen3moe shared experts") << moe << "u32:qwen3moe.expert_shared_count=1"
                                                 << QStringList{"shared experts", "not supported"};
        QTest::newRow("qwen3moe unnormalised weights") << moe << "bool:qwen3moe.expert_weights_norm=false"
                                                       << QStringList{"expert_weights_norm false", "not supported"};
        QTest::newRow("qwen3moe scaled weights") << moe << "f32:qwen3moe.expert_weights_scale=2.5"
                                                 << QStringList{"expert_weights_scale 2.5", "not supported"};
        QTest::newRow("qwen3moe sigmoid gating") << moe << "u32:qwen3moe.expert_gating_func=2"
                                                 << QStringList{"gating function 2", "only softmax"};
        const QString mistral = "mistral3-tiny.gguf";
        QTest::newRow("mistral3 experts") << mistral << "u32:mistral3.expert_count=8"
                                          << QStringList{"mistral3 with routed experts", "not supported"};
        QTest::newRow("llama experts (Mixtral)") << "llama-linear-rope.gguf" << "u32:llama.expert_count=8"
                                                 << QStringList{"llama with routed experts", "llama.expert_count"};
        QTest::newRow("qwen2 experts") << "qwen2-tiny.gguf" << "u32:qwen2.expert_count=4"
                                       << QStringList{"qwen2 with routed experts", "not supported"};
        QTest::newRow("mistral3 output bias") << mistral << "bias:blk.1.attn_output.bias"
                                              << QStringList{"'blk.1.attn_output.bias'", "not supported for mistral3"};
        QTest::newRow("mistral3 zero beta") << mistral << "f32:mistral3.rope.scaling.yarn_beta_fast=0"
                                            << QStringList{"invalid YaRN beta"};
        QTest::newRow("mistral3 missing ffn_gate") << mistral << "drop:blk.0.ffn_gate.weight"
                                                   << QStringList{"missing", "'blk.0.ffn_gate.weight'"};
    }

    void newArchitectureLoadErrors() {
        QFETCH(QString, file);
        QFETCH(QString, edit);
        QFETCH(QStringList, words);
        Parts p = Parts::read(synthetic_dir() / file.toStdString());
        apply_edit(p, edit);
        expect_load_error(p, words);
    }

    // Gemma 3's layer pattern as an explicit flag per layer (as newer files carry it)
    // and as a period: the same layers slide as with the default period of 6.
    void gemma3PatternForms() {
        for (const bool as_array : {true, false}) {
            Parts p = Parts::read(synthetic_dir() / "gemma3-tiny.gguf");
            if (as_array) {
                std::vector<arbor::GgufValue> flags;
                for (int i = 0; i < 6; ++i) flags.push_back(arbor::test::gv::boolean(i != 5));
                p.set("gemma3.attention.sliding_window_pattern", arbor::test::gv::arr(arbor::GgufType::Bool, flags));
            } else {
                p.set("gemma3.attention.sliding_window_pattern", arbor::test::gv::u32(6));
            }
            const auto path = std::filesystem::path(tmp_.path().toStdString()) / "pattern.gguf";
            p.write(path);
            const auto m = arbor::Model::load(path);
            QVERIFY((m->config().local_layers == std::vector<bool>{true, true, true, true, true, false}));
            compare_with_reference(*m, reference("gemma3-tiny.gguf"), as_array ? "pattern flags" : "pattern period");
        }
    }

    // A final logit soft-cap, which llama.cpp applies to Gemma 3 where the file gives one
    // (cap * tanh(logit / cap), its gemma3 graph's last step): on gemma3-tiny with a cap of
    // 2 (its logits reach about 3, so the cap bends them) the logits are the reference's
    // so transformed, and not the reference's own.
    void gemma3FinalLogitSoftcap() {
        constexpr double kCap = 2.0;
        Parts p = Parts::read(synthetic_dir() / "gemma3-tiny.gguf");
        apply_edit(p, "f32:gemma3.final_logit_softcapping=2");
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "softcap.gguf";
        p.write(path);
        const auto m = arbor::Model::load(path);
        QCOMPARE(m->config().final_logit_softcap, float(kCap));
        QJsonObject capped = reference("gemma3-tiny.gguf");
        QJsonArray cases;
        double largest = 0.0;
        for (const auto& c : capped.value("cases").toArray()) {
            QJsonObject one = c.toObject();
            QJsonArray logits;
            for (const auto& x : one.value("logits").toArray()) {
                largest = std::max(largest, std::abs(x.toDouble()));
                logits.append(kCap * std::tanh(x.toDouble() / kCap));
            }
            one.insert("logits", logits);
            cases.append(one);
        }
        capped.insert("cases", cases);
        QVERIFY2(largest > kCap, qPrintable(QString::number(largest)));
        compare_with_reference(*m, capped, "with a final logit soft-cap of 2");
        QVERIFY(last_case_diff(*m, "gemma3-tiny.gguf") > 0.1);
    }

    // Without the feature a reference model covers, the same weights give other logits:
    // the reference's sequences (up to 40 ids) do depend on it. Gemma 3 without its
    // sliding window (8); SmolLM3 read as llama (RoPE in every layer); Qwen3 with linear
    // scaling instead of YaRN.
    void featureMatters_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("edit");
        QTest::newRow("gemma3 without window") << "gemma3-tiny.gguf" << "no-window";
        QTest::newRow("smollm3 as llama") << "smollm3-tiny.gguf" << "as-llama";
        QTest::newRow("phi3 rotating whole heads") << "phi3-tiny.gguf" << "u32:phi3.rope.dimension_count=32";
        QTest::newRow("yarn as linear") << "qwen3-yarn-tiny.gguf" << "linear";
        // One expert per token instead of two; the experts' order in the stacks reversed.
        QTest::newRow("qwen3moe one expert") << "qwen3moe-tiny.gguf" << "u32:qwen3moe.expert_used_count=1";
        QTest::newRow("qwen3moe experts reversed") << "qwen3moe-tiny.gguf" << "reverse-experts";
    }

    void featureMatters() {
        QFETCH(QString, file);
        QFETCH(QString, edit);
        Parts p = Parts::read(synthetic_dir() / file.toStdString());
        if (edit == "no-window") {
            p.erase_key("gemma3.attention.sliding_window");
        } else if (edit == "as-llama") {
            p.set("general.architecture", arbor::test::gv::str("llama"));
            for (auto& [key, value] : p.metadata)
                if (key.starts_with("smollm3.")) key = "llama." + key.substr(8);
        } else if (edit == "linear") {
            p.set("qwen3.rope.scaling.type", arbor::test::gv::str("linear"));
        } else if (edit == "reverse-experts") {
            for (auto& t : p.tensors) {
                if (!t.name.ends_with("_exps.weight")) continue;
                const size_t expert_bytes = t.data.size() / size_t(t.dims[2]);
                for (size_t a = 0, b = size_t(t.dims[2]) - 1; a < b; ++a, --b)
                    std::swap_ranges(t.data.begin() + ptrdiff_t(a * expert_bytes),
                                     t.data.begin() + ptrdiff_t((a + 1) * expert_bytes),
                                     t.data.begin() + ptrdiff_t(b * expert_bytes));
            }
        } else {
            apply_edit(p, edit);
        }
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "without-feature.gguf";
        p.write(path);
        const auto m = arbor::Model::load(path);
        QVERIFY(m->config().local_layers.empty());
        QCOMPARE(m->config().no_rope_interval, 0);
        QVERIFY(!m->config().rope_yarn);
        const double diff = last_case_diff(*m, file);
        QVERIFY2(diff > 0.05, qPrintable(QString("max abs diff without the feature only %1").arg(diff)));
    }

    // Mistral 3's own steps matter to its reference: without the attention temperature
    // (the 40-id case reaches positions 16-39), or without the log multiplier (cos/sin
    // then grow by 1 + 0.1 ln 4).
    void mistral3FeaturesMatter_data() {
        QTest::addColumn<QString>("key");
        QTest::newRow("no temperature") << "mistral3.attention.temperature_scale";
        QTest::newRow("no log multiplier") << "mistral3.rope.scaling.yarn_log_multiplier";
    }

    void mistral3FeaturesMatter() {
        QFETCH(QString, key);
        Parts p = Parts::read(synthetic_dir() / "mistral3-tiny.gguf");
        p.erase_key(key.toStdString());
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "mistral3-without.gguf";
        p.write(path);
        const auto m = arbor::Model::load(path);
        QVERIFY(m->config().attn_temp_scale == 0.0f || m->config().rope_yarn_log_mul == 0.0f);
        const double diff = last_case_diff(*m, "mistral3-tiny.gguf");
        QVERIFY2(diff > 0.01, qPrintable(QString("max abs diff without %1 only %2").arg(key).arg(diff)));
    }

    // The batched scheduler's step: every reference sequence of the experts model in one
    // forward (84 rows routed to different experts, sequences on interleaved pages) gives
    // each sequence's reference logits; so does a decode row beside another's prefill.
    void expertsBatchedAcrossSequences() {
        const QString failure =
            arbor::test::batched_failure(model("qwen3moe-tiny.gguf"), reference("qwen3moe-tiny.gguf"), kMaxAbsDiff);
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
    }

    // A decode row alone (its experts' gate and up products in one call) has the bits it
    // has beside another sequence's prompt (the experts' rows grouped as for a prompt).
    void expertsDecodeRowDoesNotDependOnItsBatch() {
        const arbor::Model& m = model("qwen3moe-tiny.gguf");
        const QJsonObject ref = reference("qwen3moe-tiny.gguf");
        const QJsonArray cases = ref.value("cases").toArray();
        const auto a = ids_of(cases[0].toObject().value("ids")), b = ids_of(cases[1].toObject().value("ids"));
        arbor::BackendOptions options;
        options.kv_tokens = arbor::test::reference_context(ref);
        options.threads = 2;
        options.kv_type = arbor::KvType::F32;
        auto backend = arbor::make_cpu_backend(m, options);
        const int32_t ps = backend->page_size(), pages = backend->page_count();
        std::vector<int32_t> table_a, table_b;
        for (int32_t i = 0; i * ps < int32_t(a.size()); ++i) table_a.push_back(pages - 1 - 2 * i);
        for (int32_t i = 0; i * ps < int32_t(b.size()); ++i) table_b.push_back(pages - 2 - 2 * i);
        using Rows = arbor::SequenceRows;
        const int32_t last = int32_t(a.size()) - 1;
        arbor::ForwardBatch prefill;
        prefill.tokens.assign(a.begin(), a.end() - 1);
        prefill.sequences.push_back({0, last, 0, table_a, Rows::Logits::None});
        std::vector<float> alone, beside;
        backend->forward(prefill, alone);
        arbor::ForwardBatch decode;
        decode.tokens = {a.back()};
        decode.sequences.push_back({0, 1, last, table_a, Rows::Logits::Last});
        backend->forward(decode, alone);
        decode.tokens.insert(decode.tokens.end(), b.begin(), b.end());
        decode.sequences.push_back({1, int32_t(b.size()), 0, table_b, Rows::Logits::Last});
        backend->forward(decode, beside);
        const size_t n_vocab = size_t(m.config().n_vocab);
        QCOMPARE(alone.size(), n_vocab);
        QCOMPARE(beside.size(), 2 * n_vocab);
        QVERIFY(std::equal(alone.begin(), alone.end(), beside.begin()));
    }

    // A llama file's sliding window (Mistral 7B's) is not applied, as in llama.cpp, and the
    // load says so where the window is shorter than the trained context (2048 here); the
    // logits stay llama.cpp's.
    void llamaSlidingWindowIsAWarning() {
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "windowed.gguf";
        for (const auto& [window, warned] : {std::pair(16, true), std::pair(2048, false)}) {
            Parts p = Parts::read(synthetic_dir() / "llama-linear-rope.gguf");
            apply_edit(p, "u32:llama.attention.sliding_window=" + QString::number(window));
            p.write(path);
            const auto m = arbor::Model::load(path);
            const QString warning = QString::fromStdString(m->config().load_warning);
            QCOMPARE(warning.contains("last " + QString::number(window) + " tokens"), warned);
            QCOMPARE(warning.isEmpty(), !warned);
            if (warned) compare_with_reference(*m, reference("llama-linear-rope.gguf"), "with a sliding window key");
        }
        QVERIFY(model("llama-linear-rope.gguf").config().load_warning.empty());
    }

    // The rewriting itself keeps a model loadable and its logits unchanged, so the errors
    // above come from the one edit each.
    void unchangedCopyLoads() {
        Parts p = Parts::read(synthetic_dir() / "qwen2-tiny.gguf");
        const auto path = std::filesystem::path(tmp_.path().toStdString()) / "copy.gguf";
        p.write(path);
        const auto m = arbor::Model::load(path);
        compare_with_reference(*m, reference("qwen2-tiny.gguf"), "rewritten copy");
    }
};

QTEST_APPLESS_MAIN(TestArchitectures)
#include "test_architectures.moc"
