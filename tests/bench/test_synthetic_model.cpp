// Synthetic models (synthetic_model.h): the files load with Model::load with the asked
// shape and weight types, give finite, non-degenerate logits on the CPU backend for every
// type and both architectures, are the same bytes for the same seed whatever the thread
// count, and a truncated file is refused with a clear error. Expected shapes are the
// published models' configurations, written here independently of the generator.
#include "test_support.h"

#include "synthetic_cache.h"
#include "synthetic_model.h"

#include "arbor/chat_template.h"
#include "arbor/generator.h"
#include "arbor/kernels/quant.h"
#include "arbor/model.h"

#include <QProcess>
#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>

using arbor::DType;
using arbor::synth::Arch;
using arbor::synth::SyntheticSpec;

namespace {

SyntheticSpec spec_of(const char* shape, const char* type, Arch arch = Arch::Llama) {
    SyntheticSpec s;
    s.shape = *arbor::synth::shape_named(shape);
    s.types = *arbor::synth::weight_types_named(type);
    s.arch = arch;
    return s;
}

std::vector<char> file_bytes(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), {}};
}

// The message of the exception of type E that f() throws, or what happened instead.
template <typename E, typename F>
QString thrown(F f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {
        return "other exception: " + QString::fromStdString(e.what());
    }
    return "no error";
}

QString load_error(const std::filesystem::path& path) {
    return thrown<arbor::Error>([&] { arbor::Model::load(path); });
}

// Mean and standard deviation of a whole weight matrix, dequantized by the kernels.
std::pair<double, double> moments(const arbor::TensorView& w) {
    std::vector<float> row(size_t(w.cols));
    double sum = 0.0, sum2 = 0.0;
    for (int64_t r = 0; r < w.rows; ++r) {
        arbor::dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + size_t(r) * w.row_stride, row.data(),
                              w.cols);
        for (float v : row) {
            sum += v;
            sum2 += double(v) * v;
        }
    }
    const double n = double(w.rows) * double(w.cols);
    const double mean = sum / n;
    return {mean, std::sqrt(std::max(0.0, sum2 / n - mean * mean))};
}

// Empty when a weight matrix has about the intended spread sigma and no offset; else its
// mean and standard deviation.
QString spread_failure(const arbor::TensorView& w, double sigma) {
    const auto [mean, sd] = moments(w);
    if (sd > 0.7 * sigma && sd < 1.3 * sigma && std::abs(mean) < 0.15 * sigma) return {};
    return QString("mean %1, sd %2, intended sd %3").arg(mean).arg(sd).arg(sigma);
}

// Prefills a short chat and decodes three tokens: every logit finite, unit-scale logits
// that differ between tokens and none huge (the weights' scales keep activations bounded).
void check_generation(const arbor::Model& model, bool int8 = false) {
    arbor::BackendOptions options;
    options.threads = 2;
    options.int8_activations = int8;
    options.kv_tokens = 64;
    auto backend = arbor::make_cpu_backend(model, options);
    arbor::Generator gen(model, *backend);
    const auto ids = model.tokenizer().encode("<|im_start|>user\nthe quick brown fox<|im_end|>\n", false, true);
    std::vector<float> logits = gen.prefill(ids);
    const auto n = double(model.config().n_vocab);
    for (int step = 0; step < 3; ++step) {
        QCOMPARE(logits.size(), size_t(model.config().n_vocab));
        double sum = 0.0, sum2 = 0.0, largest = 0.0;
        for (float v : logits) {
            QVERIFY2(std::isfinite(v), "a logit is not finite");
            sum += v;
            sum2 += double(v) * v;
            largest = std::max(largest, double(std::abs(v)));
        }
        const double sd = std::sqrt(sum2 / n - (sum / n) * (sum / n));
        QVERIFY2(sd > 0.05 && largest < 50.0, qPrintable(QString("logit sd %1, largest %2").arg(sd).arg(largest)));
        logits = gen.decode(arbor::TokenId(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    }
}

} // namespace

class TestSyntheticModel : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;

    std::filesystem::path path(const QString& name) const { return tmp_.filePath(name).toStdString(); }

    // A tiny model of `arch` with a separate output, written and loaded.
    std::unique_ptr<arbor::Model> untied_model(const char* type, Arch arch) {
        SyntheticSpec spec = spec_of("tiny", type, arch);
        spec.shape.tied = false;
        const auto file = path(QString("tiny-%1-%2.gguf").arg(QString::fromUtf8(arbor::synth::arch_name(arch).data()), type));
        arbor::synth::write_synthetic_model(spec, file);
        return arbor::Model::load(file);
    }

private slots:
    void initTestCase() { QVERIFY(tmp_.isValid()); }

    // Every weight type, both architectures, tied (llama) and untied (qwen2) output.
    void everyTypeRunsForward_data() {
        QTest::addColumn<QString>("type");
        QTest::addColumn<int>("arch");
        for (const char* t : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k",
                              "q2_k", "q3_k", "iq4_nl", "iq4_xs", "mxfp4"})
            for (Arch a : {Arch::Llama, Arch::Qwen2})
                QTest::newRow(qPrintable(QString("%1-%2").arg(t, QString::fromUtf8(arbor::synth::arch_name(a).data()))))
                    << QString(t) << int(a);
    }
    void everyTypeRunsForward() {
        QFETCH(QString, type);
        QFETCH(int, arch);
        SyntheticSpec spec = spec_of("tiny", qPrintable(type), Arch(arch));
        spec.shape.tied = spec.arch == Arch::Llama;
        const auto file = path("tiny-" + type + QString::number(arch) + ".gguf");
        arbor::synth::write_synthetic_model(spec, file);
        const auto model = arbor::Model::load(file);

        const auto& c = model->config();
        QCOMPARE(c.architecture, std::string(spec.arch == Arch::Qwen2 ? "qwen2" : "llama"));
        QCOMPARE(c.rope_neox, spec.arch == Arch::Qwen2);
        QCOMPARE(c.n_layer, 2);
        QCOMPARE(c.n_embd, 256);
        QCOMPARE(c.n_head, 4);
        QCOMPARE(c.n_head_kv, 2);
        QCOMPARE(c.head_dim, 64);
        QCOMPARE(c.n_ff, 512);
        QCOMPARE(c.n_vocab, 512);
        QCOMPARE(model->weights().output.data == model->weights().token_embd.data, spec.shape.tied);
        QCOMPARE(model->weights().layers[1].bq.size(), spec.arch == Arch::Qwen2 ? size_t(256) : size_t(0));
        QCOMPARE(model->weights().layers[1].bv.size(), spec.arch == Arch::Qwen2 ? size_t(128) : size_t(0));

        // Rows of 256 and 512 hold whole K-quant blocks: every matrix has the asked type.
        const DType want = spec.types.base;
        int matrices = 0;
        for (const auto& t : model->file().tensors()) {
            const DType expected = t.dims.size() == 2 ? want : DType::F32;
            QVERIFY2(t.type == expected, qPrintable(QString::fromStdString(t.name + " is " +
                                                                           std::string(arbor::dtype_name(t.type)))));
            matrices += t.dims.size() == 2;
        }
        QCOMPARE(matrices, 1 + !spec.shape.tied + 2 * 7);

        // Weights have about the intended spread (1/sqrt(row length)) and no offset.
        for (const auto* w : {&model->weights().layers[0].wq, &model->weights().layers[1].w_down}) {
            const double sigma = (w == &model->weights().layers[0].wq ? 1.0 : 0.5) / std::sqrt(double(w->cols));
            const QString failure = spread_failure(*w, sigma);
            QVERIFY2(failure.isEmpty(), qPrintable(failure));
        }

        check_generation(*model);

        // Int8 activations run every type through its panels (8-bit codes); in GGUF order
        // they have products for the types up to Q6_K only: the low-bit types are refused
        // when the backend is made, naming the type.
        check_generation(*model, true);
        arbor::BackendOptions int8;
        int8.int8_activations = true;
        int8.kv_tokens = 64;
        int8.panel_weights = false;
        const bool low_bit = want == DType::Q2_K || want == DType::Q3_K || want == DType::IQ4_NL ||
                             want == DType::IQ4_XS || want == DType::MXFP4;
        if (low_bit) {
            const QString error = thrown<arbor::Error>([&] { arbor::make_cpu_backend(*model, int8); });
            QVERIFY2(error.contains(QString::fromUtf8(arbor::dtype_name(want).data())), qPrintable(error));
        } else {
            QVERIFY(arbor::make_cpu_backend(*model, int8) != nullptr);
        }
    }

    // Quantized experts: each expert's matrices are packed as panels of their own (the
    // products take one expert at a time), and their logits stay those of the GGUF order
    // within the panels' 16-bit rounding of activations; int8 activations run them too.
    void quantizedExpertsRun() {
        const auto model = untied_model("q4_0", Arch::Qwen3moe);
        QCOMPARE(model->config().n_expert, 8);
        QCOMPARE(model->config().n_expert_used, 2);
        QCOMPARE(model->weights().layers[0].gate_exps.type, DType::Q4_0);
        check_generation(*model);

        const auto ids = model->tokenizer().encode("<|im_start|>user\nthe quick brown fox<|im_end|>\n", false, true);
        const auto logits = [&](bool panels, bool int8) {
            arbor::BackendOptions options;
            options.threads = 2;
            options.kv_tokens = 64;
            options.panel_weights = panels;
            options.int8_activations = int8;
            auto backend = arbor::make_cpu_backend(*model, options);
            arbor::Generator gen(*model, *backend);
            return gen.prefill(ids);
        };
        const std::vector<float> exact = logits(false, false);
        for (const auto& [panels, int8, bound] : {std::tuple{true, false, 2e-3}, std::tuple{false, true, 0.1},
                                                  std::tuple{true, true, 0.1}}) {
            const std::vector<float> got = logits(panels, int8);
            double diff = 0.0;
            for (size_t i = 0; i < exact.size(); ++i) diff = std::max(diff, std::abs(double(got[i]) - exact[i]));
            const QString what = QString("panels %1, int8 %2: max abs diff %3").arg(panels).arg(int8).arg(diff);
            qInfo("%s", qPrintable(what));
            QVERIFY2(diff > 0.0 && diff < bound, qPrintable(what));
        }
    }

    // gpt-oss with MXFP4 experts (mxfp4_moe): the experts' matrices are MXFP4 with about
    // the intended spread (4/sqrt(row length), so gpt-oss's clamp is reached), everything
    // else F32; it generates, with int8 activations too (through the panels), and int8
    // activations in GGUF order are refused naming MXFP4.
    void mxfp4ExpertsRun() {
        const auto model = untied_model("mxfp4_moe", Arch::GptOss);
        QCOMPARE(model->config().architecture, std::string("gpt-oss"));
        const auto& layer = model->weights().layers[1];
        for (const auto* w : {&layer.gate_exps, &layer.up_exps, &layer.down_exps}) QCOMPARE(w->type, DType::MXFP4);
        QCOMPARE(layer.wq.type, DType::F32);
        QCOMPARE(model->weights().output.type, DType::F32);
        const QString failure = spread_failure(layer.gate_exps, 4.0 / std::sqrt(double(layer.gate_exps.cols)));
        QVERIFY2(failure.isEmpty(), qPrintable(failure));
        check_generation(*model);
        check_generation(*model, true);  // int8 activations through the panels

        arbor::BackendOptions int8;
        int8.int8_activations = true;
        int8.kv_tokens = 64;
        int8.panel_weights = false;
        const QString error = thrown<arbor::Error>([&] { arbor::make_cpu_backend(*model, int8); });
        QVERIFY2(error.contains("MXFP4"), qPrintable(error));
    }

    // The named shapes are the published models' (one layer written, to stay small), and
    // 135m-32k is SmolLM2-135M's with a longer context.
    void namedShapes_data() {
        QTest::addColumn<QString>("shape");
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("embd");
        QTest::addColumn<int>("heads");
        QTest::addColumn<int>("kv_heads");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("ff");
        QTest::addColumn<bool>("tied");
        QTest::addColumn<int>("context");
        QTest::newRow("SmolLM2-135M") << "135m" << 30 << 576 << 9 << 3 << 64 << 1536 << true << 8192;
        QTest::newRow("SmolLM2-135M, 32k context") << "135m-32k" << 30 << 576 << 9 << 3 << 64 << 1536 << true << 32768;
        QTest::newRow("Llama-3.2-1B") << "1b" << 16 << 2048 << 32 << 8 << 64 << 8192 << true << 131072;
        QTest::newRow("Llama-3.2-3B") << "3b" << 28 << 3072 << 24 << 8 << 128 << 8192 << true << 131072;
        QTest::newRow("Llama-3.1-8B") << "8b" << 32 << 4096 << 32 << 8 << 128 << 14336 << false << 131072;
    }
    void namedShapes() {
        QFETCH(QString, shape);
        QFETCH(int, layers);
        QFETCH(int, embd);
        QFETCH(int, heads);
        QFETCH(int, kv_heads);
        QFETCH(int, head_dim);
        QFETCH(int, ff);
        QFETCH(bool, tied);
        QFETCH(int, context);
        SyntheticSpec spec = spec_of(qPrintable(shape), "q4_k");
        QCOMPARE(spec.shape.n_layer, layers);
        QCOMPARE(spec.shape.n_vocab, 32000);
        spec.shape.n_layer = 1;
        spec.shape.n_vocab = 1024;
        const auto file = path(shape + ".gguf");
        arbor::synth::write_synthetic_model(spec, file);
        auto model = arbor::Model::load(file);
        const auto& c = model->config();
        QCOMPARE(c.n_layer, 1);
        QCOMPARE(c.n_embd, embd);
        QCOMPARE(c.n_head, heads);
        QCOMPARE(c.n_head_kv, kv_heads);
        QCOMPARE(c.head_dim, head_dim);
        QCOMPARE(c.n_ff, ff);
        QCOMPARE(c.n_vocab, 1024);
        QCOMPARE(c.n_ctx_train, context);
        QCOMPARE(model->weights().output.data == model->weights().token_embd.data, tied);
        // Q4_K needs rows of whole 256-blocks; SmolLM2's rows of 576 take Q5_0 as llama.cpp does.
        for (const auto& t : model->file().tensors()) {
            if (t.dims.size() != 2) continue;
            const DType expected = t.cols() % 256 == 0 ? DType::Q4_K : DType::Q5_0;
            QVERIFY2(t.type == expected, qPrintable(QString::fromStdString(t.name + " is " +
                                                                           std::string(arbor::dtype_name(t.type)))));
        }
        model.reset();
        std::filesystem::remove(file);
    }

    // All 30 layers of the 135m shape, in the Q4_K_M mix (with its fallbacks for rows of
    // 576) and the full vocabulary: activations stay bounded through a realistic depth.
    void fullDepthStaysBounded() {
        const auto file = path("135m-q4_k_m.gguf");
        arbor::synth::write_synthetic_model(spec_of("135m", "q4_k_m"), file);
        auto model = arbor::Model::load(file);
        QCOMPARE(model->config().n_layer, 30);
        QCOMPARE(model->config().n_vocab, 32000);
        check_generation(*model);
        model.reset();
        std::filesystem::remove(file);
    }

    // llama.cpp's Q4_K_M: Q6_K output, and Q6_K attn_v and ffn_down in layers
    // i < n/8, i >= 7n/8 and (i - n/8) % 3 == 2: for 8 layers, 0, 3, 6 and 7.
    void q4KMMix() {
        SyntheticSpec spec = spec_of("tiny", "q4_k_m");
        spec.shape.n_layer = 8;
        spec.shape.tied = false;
        const auto file = path("q4_k_m.gguf");
        arbor::synth::write_synthetic_model(spec, file);
        const auto model = arbor::Model::load(file);
        const std::set<std::string> six_bits = {
            "output.weight",        "blk.0.attn_v.weight", "blk.0.ffn_down.weight", "blk.3.attn_v.weight",
            "blk.3.ffn_down.weight", "blk.6.attn_v.weight", "blk.6.ffn_down.weight", "blk.7.attn_v.weight",
            "blk.7.ffn_down.weight"};
        for (const auto& t : model->file().tensors()) {
            if (t.dims.size() != 2) continue;
            const DType expected = six_bits.contains(t.name) ? DType::Q6_K : DType::Q4_K;
            QVERIFY2(t.type == expected, qPrintable(QString::fromStdString(t.name + " is " +
                                                                           std::string(arbor::dtype_name(t.type)))));
        }
    }

    void sameSeedSameBytes() {
        SyntheticSpec spec = spec_of("tiny", "q4_k", Arch::Qwen2);
        spec.shape.n_vocab = 32000;  // a token_embd of several chunks, drawn by several threads
        spec.seed = 7;
        spec.threads = 1;
        arbor::synth::write_synthetic_model(spec, path("seed7-1.gguf"));
        spec.threads = 3;
        arbor::synth::write_synthetic_model(spec, path("seed7-3.gguf"));
        spec.seed = 8;
        arbor::synth::write_synthetic_model(spec, path("seed8.gguf"));
        const auto a = file_bytes(path("seed7-1.gguf"));
        QVERIFY(a.size() > 5000000);
        QVERIFY(a == file_bytes(path("seed7-3.gguf")));
        const auto other = file_bytes(path("seed8.gguf"));
        QCOMPARE(other.size(), a.size());
        QVERIFY(other != a);
    }

    void truncatedFileIsRefused() {
        const auto file = path("truncated.gguf");
        arbor::synth::write_synthetic_model(spec_of("tiny", "q8_0"), file);
        const auto size = std::filesystem::file_size(file);
        std::filesystem::resize_file(file, size - 100);
        QString error = load_error(file);
        QVERIFY2(error.contains("extends beyond the end of the file") && error.contains("truncated"), qPrintable(error));
        std::filesystem::resize_file(file, 4000);  // inside the vocabulary
        error = load_error(file);
        QVERIFY2(error.startsWith("GGUF file") && error.contains("truncated.gguf"), qPrintable(error));
    }

    // The vocabulary: byte-level BPE whose merges make words of up to three letters after a
    // space one token, and the ChatML control tokens.
    void vocabularyAndTemplate() {
        SyntheticSpec spec = spec_of("tiny", "q8_0");
        spec.shape.n_vocab = 32000;
        const auto file = path("vocab.gguf");
        arbor::synth::write_synthetic_model(spec, file);
        const auto model = arbor::Model::load(file);
        const auto& tok = model->tokenizer();
        QCOMPARE(tok.n_vocab(), 32000);
        const std::string text = "Hello, world! the quick brown fox: 3.14 \xc3\xa9t\xc3\xa9 \xe2\x9c\x93";
        QCOMPARE(tok.decode(tok.encode(text, false, false)), text);
        QCOMPARE(tok.encode(" the", false, false).size(), size_t(1));
        QCOMPARE(tok.encode(" fox", false, false).size(), size_t(1));
        QCOMPARE(tok.encode("fox", false, false).size(), size_t(3));
        QCOMPARE(tok.encode("<|im_start|>", false, true), std::vector<arbor::TokenId>{31998});
        QCOMPARE(tok.bos(), 31997);
        QCOMPARE(tok.eos(), 31999);
        QVERIFY(!tok.adds_bos());
        bool recognised = false;
        QCOMPARE(arbor::detect_chat_template(model->chat_template_source(), &recognised),
                 arbor::ChatTemplateKind::ChatML);
        QVERIFY(recognised);
    }

    void badSpecsAreRefused() {
        auto refusal = [&](const SyntheticSpec& spec) {
            return thrown<std::invalid_argument>([&] { arbor::synth::write_synthetic_model(spec, path("bad.gguf")); });
        };
        SyntheticSpec s = spec_of("tiny", "q4_0");
        s.shape.n_head_kv = 3;
        QCOMPARE(refusal(s), QString("synthetic model tiny: 4 heads are not a multiple of 3 kv heads"));
        s = spec_of("tiny", "q4_0");
        s.shape.n_embd = 100;
        QCOMPARE(refusal(s), QString("synthetic model tiny: embedding size 100 is not a multiple of 32"));
        s = spec_of("tiny", "q4_0");
        s.shape.n_vocab = 100;
        QCOMPARE(refusal(s), QString("synthetic model tiny: vocabulary 100 is outside 259..262144"));
        QVERIFY(!std::filesystem::exists(path("bad.gguf")));
        QVERIFY(!arbor::synth::shape_named("2b"));
        QVERIFY(!arbor::synth::weight_types_named("iq2_xs"));
        s = spec_of("tiny", "mxfp4_moe");
        QCOMPARE(refusal(s), QString("synthetic model tiny: mxfp4_moe needs an architecture with experts (qwen3moe, gpt-oss)"));
        s = spec_of("tiny", "f32", Arch::GptOss);
        QCOMPARE(refusal(s), QString("synthetic model tiny: gpt-oss has a separate output (use --untied)"));

        const QString error = thrown<std::runtime_error>(
            [&] { arbor::synth::write_synthetic_model(spec_of("tiny", "q4_0"), path("no-such-dir/x.gguf")); });
        QVERIFY2(error.startsWith("cannot create '") && error.endsWith("No such file or directory"), qPrintable(error));
    }

    // arbor-bench --synthetic: written once into $XDG_CACHE_HOME, then reused.
    void cachedModelIsReused() {
        const arbor::test::ScopedEnv cache("XDG_CACHE_HOME", tmp_.filePath("cache").toUtf8());
        int writes = 0;
        const auto count = [&](const std::filesystem::path&) { ++writes; };
        const auto first = arbor::synth::cached_synthetic_model("tiny:Q4_0", count);
        QCOMPARE(QString::fromStdString(first.string()),
                 tmp_.filePath("cache/arbor/synthetic/tiny-q4_0-seed1-v%1.gguf").arg(arbor::synth::kGeneratorVersion));
        QCOMPARE(writes, 1);
        QCOMPARE(arbor::Model::load(first)->config().n_embd, 256);
        QCOMPARE(arbor::synth::cached_synthetic_model("tiny:q4_0", count), first);
        QCOMPARE(arbor::synth::cached_synthetic_model("tiny:q4_0:llama", count), first);  // the shape's own
        QCOMPARE(writes, 1);
        const auto qwen3 = arbor::synth::cached_synthetic_model("tiny:q4_0:qwen3", count);
        QCOMPARE(QString::fromStdString(qwen3.string()),
                 tmp_.filePath("cache/arbor/synthetic/tiny-q4_0-qwen3-seed1-v%1.gguf").arg(arbor::synth::kGeneratorVersion));
        QCOMPARE(writes, 2);
        QCOMPARE(arbor::Model::load(qwen3)->config().architecture, std::string("qwen3"));
        for (const char* bad : {"tiny", "tiny:", "huge:q4_0", "tiny:q4_0:x", "tiny:q4_0:qwen3:x"}) {
            const QString error =
                thrown<std::invalid_argument>([&] { arbor::synth::cached_synthetic_model(bad, count); });
            QVERIFY2(error.endsWith("' is not SHAPE:TYPE[:ARCH] with a known shape, type and architecture"),
                     qPrintable(error));
        }
        QCOMPARE(writes, 2);
    }

    // Every named shape is a valid spec of its own architecture (the large ones are not
    // written here).
    void namedShapesAreValid() {
        for (const std::string& name : arbor::synth::shape_names()) {
            SyntheticSpec spec = spec_of(name.c_str(), "q4_k");
            spec.arch = spec.shape.arch;
            try {
                arbor::synth::validate(spec);
            } catch (const std::invalid_argument& e) {
                QFAIL(e.what());
            }
        }
        QVERIFY(arbor::synth::shape_named("qwen3-1.7b")->arch == Arch::Qwen3);
        QVERIFY(arbor::synth::shape_named("gemma3-1b")->arch == Arch::Gemma3);
        QVERIFY(arbor::synth::shape_named("qwen3moe-1.7b-a0.3b")->arch == Arch::Qwen3moe);
        QVERIFY(arbor::synth::shape_named("phi4-mini")->longrope_ctx == 4096);
        QVERIFY(arbor::synth::shape_named("1b")->arch == Arch::Llama);
    }

    void commandLine() {
        QProcess p;
        const QString out = tmp_.filePath("cli.gguf");
        p.start(ARBOR_SYNTH_PATH, {"--shape", "tiny", "--type", "q5_k", "--arch", "qwen2", "--untied", "--layers",
                                   "3", "--kv-heads", "1", "--head-dim", "128", "--heads", "2", "--seed", "5",
                                   "--out", out});
        QVERIFY(p.waitForFinished(60000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto model = arbor::Model::load(out.toStdString());
        QCOMPARE(model->config().architecture, std::string("qwen2"));
        QCOMPARE(model->config().n_layer, 3);
        QCOMPARE(model->config().n_head, 2);
        QCOMPARE(model->config().n_head_kv, 1);
        QCOMPARE(model->config().head_dim, 128);
        QVERIFY(model->weights().output.data != model->weights().token_embd.data);
        QCOMPARE(model->weights().layers[2].wk.type, DType::Q5_K);

        p.start(ARBOR_SYNTH_PATH, {"--shape", "tiny", "--type", "iq2_xs", "--out", out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        const QString err = p.readAllStandardError();
        QVERIFY2(err.startsWith("arbor-synth: unknown type 'iq2_xs'"), qPrintable(err));
    }
};

QTEST_GUILESS_MAIN(TestSyntheticModel)
#include "test_synthetic_model.moc"
