// The threaded matrix product against the dequantize-then-multiply reference, for every
// weight type, several batch sizes and thread counts.
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/matmul.h"
#include "arbor/kernels/panel_weights.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace {

// Random but valid weight bytes: quantization keeps scales finite, which random bytes
// in the half-precision scale fields would not.
std::vector<uint8_t> random_weights(arbor::DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    std::vector<uint8_t> bytes(arbor::row_bytes(type, cols) * size_t(rows));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) b = uint8_t(byte(rng));
    // Overwrite each block's scale fields with sane halves/bfloats.
    std::uniform_real_distribution<float> scale(0.001f, 0.02f);
    const auto& info = arbor::dtype_info(type);
    const size_t blocks = bytes.size() / info.block_bytes;
    for (size_t i = 0; i < blocks; ++i) {
        uint8_t* blk = bytes.data() + i * info.block_bytes;
        auto put_half = [&](size_t offset) {
            const uint16_t h = arbor::fp32_to_fp16(scale(rng));
            std::memcpy(blk + offset, &h, 2);
        };
        switch (type) {
        case arbor::DType::F32: { float f = scale(rng) * 50; std::memcpy(blk, &f, 4); break; }
        case arbor::DType::F16: put_half(0); break;
        case arbor::DType::BF16: { uint16_t b = arbor::fp32_to_bf16(scale(rng) * 50); std::memcpy(blk, &b, 2); break; }
        case arbor::DType::Q4_0: case arbor::DType::Q5_0: case arbor::DType::Q8_0: put_half(0); break;
        case arbor::DType::Q4_1: case arbor::DType::Q5_1: case arbor::DType::Q4_K: case arbor::DType::Q5_K:
            put_half(0); put_half(2); break;
        case arbor::DType::Q6_K: put_half(offsetof(arbor::BlockQ6_K, d)); break;
        case arbor::DType::Q2_K: put_half(offsetof(arbor::BlockQ2_K, d)); put_half(offsetof(arbor::BlockQ2_K, dmin)); break;
        case arbor::DType::Q3_K: put_half(offsetof(arbor::BlockQ3_K, d)); break;
        case arbor::DType::IQ4_NL: case arbor::DType::IQ4_XS: put_half(0); break;
        case arbor::DType::MXFP4: blk[0] = uint8_t(120 + byte(rng) % 8); break;  // scales 2^-8 .. 2^-1
        default: break;
        }
    }
    return bytes;
}

} // namespace

class TestMatmul : public QObject {
    Q_OBJECT
private slots:
    void matchesReference_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("batch");
        QTest::addColumn<int>("threads");
        QTest::addColumn<int>("mode");
        const arbor::DType types[] = {arbor::DType::F32, arbor::DType::F16, arbor::DType::BF16, arbor::DType::Q8_0,
                                      arbor::DType::Q4_0, arbor::DType::Q4_1, arbor::DType::Q5_0, arbor::DType::Q5_1,
                                      arbor::DType::Q4_K, arbor::DType::Q5_K, arbor::DType::Q6_K};
        // The low-bit types have float products only.
        const arbor::DType float_only[] = {arbor::DType::Q2_K, arbor::DType::Q3_K, arbor::DType::IQ4_NL,
                                           arbor::DType::IQ4_XS, arbor::DType::MXFP4};
        auto modes = [&](arbor::DType t) {
            if (std::find(std::begin(float_only), std::end(float_only), t) != std::end(float_only))
                return std::vector{arbor::Activations::Float};
            return std::vector{arbor::Activations::Float, arbor::Activations::Int8};
        };
        std::vector<arbor::DType> all(std::begin(types), std::end(types));
        all.insert(all.end(), std::begin(float_only), std::end(float_only));
        for (auto t : all)
            for (int batch : {1, 3, 70})
                for (int threads : {1, 3})
                    for (auto mode : modes(t))
                        QTest::newRow(qPrintable(QString("%1 batch %2 threads %3 %4")
                                                     .arg(QString::fromUtf8(arbor::dtype_name(t).data()))
                                                     .arg(batch)
                                                     .arg(threads)
                                                     .arg(mode == arbor::Activations::Float ? "float" : "int8")))
                            << int(t) << batch << threads << int(mode);
    }
    void matchesReference() {
        QFETCH(int, type);
        QFETCH(int, batch);
        QFETCH(int, threads);
        QFETCH(int, mode);
        const auto dtype = arbor::DType(type);
        const int64_t cols = 512, rows = 37;
        std::mt19937 rng(42 + type);
        const auto bytes = random_weights(dtype, rows, cols, rng);
        arbor::TensorView w{dtype, cols, rows, bytes.data(), arbor::row_bytes(dtype, cols)};
        std::vector<float> x(static_cast<size_t>(batch * cols)), bias(static_cast<size_t>(rows));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (auto& v : x) v = normal(rng);
        for (auto& v : bias) v = normal(rng);

        std::vector<float> y(static_cast<size_t>(batch * rows), NAN), want(static_cast<size_t>(batch * rows));
        arbor::ThreadPool pool(threads);
        arbor::MatmulScratch scratch;
        const arbor::MatmulOutput out{w, y.data(), rows, bias.data()};
        arbor::matmul(pool, x.data(), batch, std::span(&out, 1), scratch, arbor::Activations(mode));
        arbor::matmul_reference(x.data(), batch, arbor::MatmulOutput{w, want.data(), rows, bias.data()});

        // Int8 mode quantizes activations to 8 bits for the quantized types: allow for that.
        const bool float_type = arbor::Activations(mode) == arbor::Activations::Float || dtype == arbor::DType::F32 ||
                                dtype == arbor::DType::F16 || dtype == arbor::DType::BF16;
        double max_err = 0.0, max_ref = 0.0;
        for (size_t i = 0; i < y.size(); ++i) {
            QVERIFY2(std::isfinite(y[i]), "non-finite output");
            max_err = std::max(max_err, double(std::fabs(y[i] - want[i])));
            max_ref = std::max(max_ref, double(std::fabs(want[i])));
        }
        const double tol = float_type ? 1e-4 * max_ref + 1e-4 : 0.02 * max_ref + 1e-3;
        QVERIFY2(max_err <= tol, qPrintable(QString("max error %1 > %2").arg(max_err).arg(tol)));
    }

    // matmul_each: output j gets the product with activation row j, bit for bit what a
    // matmul of that row alone gives, for panels, GGUF-order weights and Int8 mode, with
    // outputs of different types and sizes in one call.
    void eachOutputTakesItsOwnRow() {
        const int64_t cols = 512;
        std::mt19937 rng(7);
        const std::vector<std::pair<arbor::DType, int64_t>> shapes = {
            {arbor::DType::Q4_K, 48}, {arbor::DType::Q6_K, 40}, {arbor::DType::F16, 37}, {arbor::DType::Q8_0, 64}};
        std::vector<std::vector<uint8_t>> bytes;
        std::vector<arbor::TensorView> weights;
        std::vector<arbor::PanelWeights> panels;
        for (const auto& [type, rows] : shapes) {
            bytes.push_back(random_weights(type, rows, cols, rng));
            weights.push_back({type, cols, rows, bytes.back().data(), arbor::row_bytes(type, cols)});
        }
        panels.reserve(weights.size());
        for (const auto& w : weights)
            if (arbor::PanelWeights::packable(w.type, cols)) panels.push_back(arbor::PanelWeights::pack(w));
        std::vector<float> x(shapes.size() * size_t(cols));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (auto& v : x) v = normal(rng);
        arbor::ThreadPool pool(3);
        for (const auto mode : {arbor::Activations::Float, arbor::Activations::Int8}) {
            std::vector<std::vector<float>> each(shapes.size()), alone(shapes.size());
            std::vector<arbor::MatmulOutput> outputs;
            size_t packed = 0;
            for (size_t j = 0; j < shapes.size(); ++j) {
                each[j].assign(size_t(shapes[j].second), NAN);
                alone[j].assign(size_t(shapes[j].second), NAN);
                const arbor::PanelWeights* p = arbor::PanelWeights::packable(weights[j].type, cols) ? &panels[packed++] : nullptr;
                outputs.push_back({weights[j], each[j].data(), shapes[j].second, nullptr, p});
            }
            QVERIFY(packed >= 2);
            arbor::MatmulScratch scratch;
            arbor::matmul_each(pool, x.data(), outputs, scratch, mode);
            for (size_t j = 0; j < shapes.size(); ++j) {
                arbor::MatmulOutput one = outputs[j];
                one.y = alone[j].data();
                arbor::matmul(pool, x.data() + j * size_t(cols), 1, std::span(&one, 1), scratch, mode);
                QVERIFY2(std::memcmp(each[j].data(), alone[j].data(), each[j].size() * sizeof(float)) == 0,
                         qPrintable(QString("output %1, mode %2").arg(j).arg(int(mode))));
            }
        }
    }

    void fusedOutputsShareOneInput() {
        const int64_t cols = 64;
        std::vector<float> w1(static_cast<size_t>(cols * 2)), w2(static_cast<size_t>(cols * 3)), x(static_cast<size_t>(cols));
        for (int64_t i = 0; i < cols; ++i) {
            x[size_t(i)] = float(i % 5);
            w1[size_t(i)] = 1.0f;              // row 0 of w1: sum of x
            w1[size_t(cols + i)] = i == 3;     // row 1: x[3]
            for (int r = 0; r < 3; ++r) w2[size_t(r * cols + i)] = float(r);
        }
        std::vector<float> y1(2), y2(3);
        const arbor::MatmulOutput outs[] = {
            {{arbor::DType::F32, cols, 2, reinterpret_cast<const uint8_t*>(w1.data()), size_t(cols) * 4}, y1.data(), 2, nullptr},
            {{arbor::DType::F32, cols, 3, reinterpret_cast<const uint8_t*>(w2.data()), size_t(cols) * 4}, y2.data(), 3, nullptr},
        };
        arbor::ThreadPool pool(2);
        arbor::MatmulScratch scratch;
        arbor::matmul(pool, x.data(), 1, outs, scratch);
        float sum = 0;
        for (float v : x) sum += v;
        QCOMPARE(y1[0], sum);
        QCOMPARE(y1[1], 3.0f);
        QCOMPARE(y2[0], 0.0f);
        QCOMPARE(y2[2], 2.0f * sum);
    }
};

QTEST_APPLESS_MAIN(TestMatmul)
#include "test_matmul.moc"
