// The CUDA decode products' integer arithmetic (kernels/cuda/q8_dot.h), compiled for the
// CPU: the activation quantizer, and each weight type's unit dot product against the
// scalar dequantization (kernels/cpu) times the quantized activations, in double.
// Runs without a GPU; tests/cuda checks that the kernels give these functions' results.
#include "quant_test_util.h"
#include "test_support.h"

#include "arbor/kernels/quant.h"
#include "q8_dot.h"

#include <QtTest>

#include <cmath>

using namespace arbor;
namespace q8 = arbor::cuda::q8;

Q_DECLARE_METATYPE(arbor::DType)

namespace {

// Relative to the sum of |terms| of a unit: the integer sums are exact, so what is left
// is the rounding of the few float multiplications that scale them.
constexpr double kUnitTolerance = 1e-5;

const int64_t kLengths[] = {256, 512, 4096};

std::vector<uint8_t> quantized(const std::vector<float>& x) {
    std::vector<uint8_t> row(q8::row_bytes(int64_t(x.size())));
    q8::quantize_row(x.data(), int64_t(x.size()), row.data());
    return row;
}

// Element i of a quantized row as d * code.
double decoded(const std::vector<uint8_t>& row, int64_t cols, int64_t i) {
    const auto* codes = reinterpret_cast<const int8_t*>(row.data());
    return double(q8::scales_of(row.data(), cols)[i / q8::kBlock].d) * double(codes[i]);
}

float unit_dot(DType type, const uint8_t* w, int u, const q8::Act& a) {
    switch (type) {
    case DType::Q4_0: return q8::unit_dot<DType::Q4_0>(w, u, a);
    case DType::Q4_1: return q8::unit_dot<DType::Q4_1>(w, u, a);
    case DType::Q8_0: return q8::unit_dot<DType::Q8_0>(w, u, a);
    case DType::Q4_K: return q8::unit_dot<DType::Q4_K>(w, u, a);
    case DType::Q5_K: return q8::unit_dot<DType::Q5_K>(w, u, a);
    case DType::Q6_K: return q8::unit_dot<DType::Q6_K>(w, u, a);
    default: throw std::logic_error("no integer dot for this type");
    }
}

} // namespace

class TestCudaQ8Dot : public QObject {
    Q_OBJECT

private slots:
    void quantizer_keeps_each_element_within_half_a_step();
    void unit_dot_matches_dequantized_weights_data();
    void unit_dot_matches_dequantized_weights();
    void row_dot_stays_within_the_quantization_bound_data() { unit_dot_matches_dequantized_weights_data(); }
    void row_dot_stays_within_the_quantization_bound();
    void only_the_listed_types_have_an_integer_dot();
};

void TestCudaQ8Dot::quantizer_keeps_each_element_within_half_a_step() {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 20; ++trial) {
        const int64_t cols = 4096;
        std::vector<float> x = test::random_activations(cols, rng);
        for (int i = 0; i < q8::kBlock; ++i) x[size_t(32 + i)] = 0.0f;  // an all-zero block
        const auto row = quantized(x);
        const auto* codes = reinterpret_cast<const int8_t*>(row.data());
        for (int64_t b = 0; b < cols / q8::kBlock; ++b) {
            const q8::Scale s = q8::scales_of(row.data(), cols)[b];
            float amax = 0.0f;
            int32_t sum = 0;
            bool hits_127 = false;
            for (int i = 0; i < q8::kBlock; ++i) {
                const int64_t at = b * q8::kBlock + i;
                amax = std::max(amax, std::fabs(x[size_t(at)]));
                sum += codes[at];
                hits_127 = hits_127 || std::abs(codes[at]) == 127;
                QVERIFY2(std::fabs(double(x[size_t(at)]) - decoded(row, cols, at)) <= 0.5001 * double(s.d),
                         qPrintable(QString("element %1 off by more than half a step").arg(at)));
            }
            QCOMPARE(s.d, amax / 127.0f);
            QCOMPARE(s.sum, sum);
            QVERIFY2(amax == 0.0f || hits_127, "the largest element takes code +-127");
        }
    }
}

void TestCudaQ8Dot::unit_dot_matches_dequantized_weights_data() {
    QTest::addColumn<DType>("type");
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K})
        QTest::newRow(std::string(dtype_name(t)).c_str()) << t;
}

// Each unit against the double sum of dequantized weight times decoded activation. The
// same sum with the activation block's halves exchanged must miss by far more than the
// tolerance, so a wrong nibble or element order could not pass.
void TestCudaQ8Dot::unit_dot_matches_dequantized_weights() {
    QFETCH(DType, type);
    std::mt19937 rng(11);
    int units_checked = 0, order_sensitive = 0;
    double worst = 0.0;
    for (int64_t cols : kLengths) {
        for (int trial = 0; trial < 4; ++trial) {
            const auto w = test::random_weight_row(type, cols, rng);
            std::vector<float> wf(static_cast<size_t>(cols));
            dequantize_row(type, w.data(), wf.data(), cols, Isa::Scalar);
            const auto row = quantized(test::random_activations(cols, rng));
            for (int u = 0; u < int(cols / q8::kBlock); ++u) {
                double ref = 0.0, swapped = 0.0, mag = 0.0;
                for (int i = 0; i < q8::kBlock; ++i) {
                    const int64_t at = int64_t(u) * q8::kBlock + i, other = int64_t(u) * q8::kBlock + (i + 16) % 32;
                    const double p = double(wf[size_t(at)]) * decoded(row, cols, at);
                    ref += p;
                    mag += std::fabs(p);
                    swapped += double(wf[size_t(at)]) * decoded(row, cols, other);
                }
                const double got = unit_dot(type, w.data(), u, q8::act_block(row.data(), cols, u));
                const double err = std::fabs(got - ref) / (mag + 1e-30);
                worst = std::max(worst, err);
                ++units_checked;
                order_sensitive += std::fabs(swapped - ref) / (mag + 1e-30) > 100 * kUnitTolerance;
            }
        }
    }
    QVERIFY2(worst <= kUnitTolerance, qPrintable(QString("worst unit error %1 of the sum of |terms|").arg(worst)));
    QVERIFY2(order_sensitive > units_checked * 9 / 10,
             qPrintable(QString("only %1 of %2 units tell the element order apart").arg(order_sensitive).arg(units_checked)));
}

// A whole row against the float activations: the difference is the quantization's,
// at most sum |w_i| * d_block / 2, plus rounding.
void TestCudaQ8Dot::row_dot_stays_within_the_quantization_bound() {
    QFETCH(DType, type);
    std::mt19937 rng(13);
    for (int64_t cols : kLengths) {
        const auto w = test::random_weight_row(type, cols, rng);
        std::vector<float> wf(static_cast<size_t>(cols));
        dequantize_row(type, w.data(), wf.data(), cols, Isa::Scalar);
        const auto x = test::random_activations(cols, rng);
        const auto row = quantized(x);
        double got = 0.0, exact = 0.0, bound = 0.0, mag = 0.0;
        for (int u = 0; u < int(cols / q8::kBlock); ++u) {
            got += unit_dot(type, w.data(), u, q8::act_block(row.data(), cols, u));
            const double d = q8::scales_of(row.data(), cols)[u].d;
            for (int i = 0; i < q8::kBlock; ++i) {
                const size_t at = size_t(u) * q8::kBlock + size_t(i);
                exact += double(wf[at]) * double(x[at]);
                bound += std::fabs(double(wf[at])) * d / 2;
                mag += std::fabs(double(wf[at]) * double(x[at]));
            }
        }
        QVERIFY2(std::fabs(got - exact) <= bound + kUnitTolerance * mag,
                 qPrintable(QString("cols %1: %2 vs float %3, bound %4").arg(cols).arg(got).arg(exact).arg(bound)));
    }
}

void TestCudaQ8Dot::only_the_listed_types_have_an_integer_dot() {
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) QVERIFY(q8::has_dot(t));
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q5_0, DType::Q5_1}) QVERIFY(!q8::has_dot(t));
}

QTEST_GUILESS_MAIN(TestCudaQ8Dot)
#include "test_cuda_q8_dot.moc"
