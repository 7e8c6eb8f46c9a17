// Dequantization and activation quantization against values produced by independent
// implementations (gguf-py and a numpy transcription of ggml's reference quantizers;
// see tests/data/quant/README.md), for both kernel sets.
#include "quant_test_util.h"
#include "test_support.h"

#include "arbor/kernels/quant.h"

#include <QtTest>

#include <cstring>
#include <stdexcept>

using namespace arbor;

Q_DECLARE_METATYPE(arbor::DType)
Q_DECLARE_METATYPE(arbor::Isa)

namespace {

std::filesystem::path data_file(const std::string& name) {
    return test::test_data_dir() / "quant" / name;
}

} // namespace

// A macro: QSKIP returns from the function it is written in, which must be the test.
#define SKIP_UNLESS_SUPPORTED(isa)                                                       \
    do {                                                                                 \
        if (!isa_supported(isa))                                                         \
            QSKIP("this CPU lacks AVX2/FMA/F16C: only the scalar kernels are checked"); \
    } while (false)

class TestDequant : public QObject {
    Q_OBJECT

private slots:
    void dequantize_matches_gguf_py_data();
    void dequantize_matches_gguf_py();
    void quantize_activations_match_reference_data();
    void quantize_activations_match_reference();
    void vec_dot_types();
    void rejects_bad_arguments();
};

void TestDequant::dequantize_matches_gguf_py_data() {
    QTest::addColumn<DType>("type");
    QTest::addColumn<Isa>("isa");
    std::vector<DType> types = test::weight_types();
    types.insert(types.end(), test::low_bit_weight_types().begin(), test::low_bit_weight_types().end());
    for (DType t : types)
        for (Isa isa : {Isa::Scalar, Isa::Avx2}) {
            const std::string name = std::string(dtype_name(t)) + "/" + std::string(isa_name(isa));
            QTest::newRow(name.c_str()) << t << isa;
        }
}

void TestDequant::dequantize_matches_gguf_py() {
    QFETCH(DType, type);
    QFETCH(Isa, isa);
    SKIP_UNLESS_SUPPORTED(isa);
    const auto file = test::read_quant_file(data_file(std::string(dtype_name(type)) + ".bin"),
                                            test::QuantFileKind::Weights);
    QCOMPARE(file.type, type);
    const size_t rb = row_bytes(type, file.n);
    int compared = 0;
    for (int r = 0; r < file.rows; ++r) {
        std::vector<float> got(size_t(file.n), -12345.0f);
        dequantize_row(type, file.blocks.data() + r * rb, got.data(), file.n, isa);
        for (int64_t i = 0; i < file.n; ++i) {
            const float want = file.values[size_t(r) * size_t(file.n) + size_t(i)];
            if (got[i] != want)
                QFAIL(qPrintable(QString("row %1 element %2: got %3, gguf-py %4")
                                     .arg(r).arg(i).arg(double(got[i]), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
            ++compared;
        }
    }
    QVERIFY(compared >= 192);

    // All rows at once: blocks are contiguous, so this is one long row.
    std::vector<float> all(file.values.size());
    dequantize_row(type, file.blocks.data(), all.data(), file.n * file.rows, isa);
    QVERIFY(all == file.values);
}

void TestDequant::quantize_activations_match_reference_data() {
    QTest::addColumn<DType>("type");
    QTest::addColumn<Isa>("isa");
    for (DType t : {DType::Q8_0, DType::Q8_1, DType::Q8_K})
        for (Isa isa : {Isa::Scalar, Isa::Avx2}) {
            const std::string name = std::string(dtype_name(t)) + "/" + std::string(isa_name(isa));
            QTest::newRow(name.c_str()) << t << isa;
        }
}

void TestDequant::quantize_activations_match_reference() {
    QFETCH(DType, type);
    QFETCH(Isa, isa);
    SKIP_UNLESS_SUPPORTED(isa);
    const auto file = test::read_quant_file(data_file("act_" + std::string(dtype_name(type)) + ".bin"),
                                            test::QuantFileKind::Activations);
    QCOMPARE(file.type, type);
    const size_t rb = row_bytes(type, file.n);
    const size_t bb = dtype_info(type).block_bytes;
    for (int r = 0; r < file.rows; ++r) {
        std::vector<uint8_t> got(rb, 0xAA);
        quantize_row(type, file.values.data() + size_t(r) * size_t(file.n), got.data(), file.n, isa);
        const uint8_t* want = file.blocks.data() + r * rb;
        for (size_t i = 0; i < rb; ++i)
            if (got[i] != want[i])
                QFAIL(qPrintable(QString("row %1 block %2 byte %3: got 0x%4, expected 0x%5")
                                     .arg(r).arg(i / bb).arg(i % bb)
                                     .arg(got[i], 2, 16, QChar('0')).arg(want[i], 2, 16, QChar('0'))));
    }
}

void TestDequant::vec_dot_types() {
    QCOMPARE(vec_dot_type(DType::F32), DType::F32);
    QCOMPARE(vec_dot_type(DType::F16), DType::F32);
    QCOMPARE(vec_dot_type(DType::BF16), DType::F32);
    QCOMPARE(vec_dot_type(DType::Q4_0), DType::Q8_0);
    QCOMPARE(vec_dot_type(DType::Q5_0), DType::Q8_0);
    QCOMPARE(vec_dot_type(DType::Q8_0), DType::Q8_0);
    QCOMPARE(vec_dot_type(DType::Q4_1), DType::Q8_1);
    QCOMPARE(vec_dot_type(DType::Q5_1), DType::Q8_1);
    QCOMPARE(vec_dot_type(DType::Q4_K), DType::Q8_K);
    QCOMPARE(vec_dot_type(DType::Q5_K), DType::Q8_K);
    QCOMPARE(vec_dot_type(DType::Q6_K), DType::Q8_K);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, vec_dot_type(DType::Q8_K));
    // The low-bit types have float products only.
    for (DType t : test::low_bit_weight_types()) QVERIFY_THROWS_EXCEPTION(std::invalid_argument, vec_dot_type(t));
}

void TestDequant::rejects_bad_arguments() {
    std::vector<uint8_t> blocks(1024);
    std::vector<float> floats(512);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             dequantize_row(DType::Q4_0, blocks.data(), floats.data(), 33, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             dequantize_row(DType::Q4_K, blocks.data(), floats.data(), 128, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             dequantize_row(DType::Q8_K, blocks.data(), floats.data(), 256, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             quantize_row(DType::Q4_0, floats.data(), blocks.data(), 32, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             quantize_row(DType::Q8_0, floats.data(), blocks.data(), -32, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, vec_dot_fn(DType::Q8_1, Isa::Scalar));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, vec_dot_multi_fn(DType::Q8_K, Isa::Scalar));
    if (!isa_supported(Isa::Avx2))
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, vec_dot_fn(DType::Q4_0, Isa::Avx2));
    // Zero length is valid and touches nothing.
    floats[0] = 7.0f;
    dequantize_row(DType::Q4_1, blocks.data(), floats.data(), 0, Isa::Scalar);
    QCOMPARE(floats[0], 7.0f);
}

QTEST_APPLESS_MAIN(TestDequant)
#include "test_dequant.moc"
