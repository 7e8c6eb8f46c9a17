// Dot products and activation quantization: AVX2 against the scalar references, and
// the scalar integer paths against float dot products computed here in double.
#include "quant_test_util.h"
#include "test_support.h"

#include "arbor/kernels/quant.h"

#include <QtTest>

#include <cmath>

using namespace arbor;

Q_DECLARE_METATYPE(arbor::DType)

namespace {

// A macro: QSKIP returns from the function it is written in, which must be the test.
#define SKIP_WITHOUT_AVX2()                                                          \
    do {                                                                             \
        if (!isa_supported(Isa::Avx2))                                               \
            QSKIP("this CPU lacks AVX2/FMA/F16C: the AVX2 kernels cannot run here"); \
    } while (false)

// Row lengths per weight type: several multiples of the block, odd block counts
// (unroll tails), the default model's widths (576, 1536) and a long row.
std::vector<int64_t> lengths(DType t) {
    const int64_t b = dtype_info(t).block_size;
    if (b == 1) return {1, 7, 8, 33, 64, 576, 1000, 4096};
    if (b == 32) return {32, 64, 96, 224, 576, 1536, 4096};
    return {256, 512, 768, 1536, 4096};
}

struct Case {
    DType weight, act;
    int64_t n;
    std::vector<uint8_t> w;      // weight row
    std::vector<float> x;        // original activations
    std::vector<uint8_t> xq;     // scalar-quantized activations
    std::vector<float> wf, xf;   // dequantized weights, decoded activations
};

Case make_case(DType weight, int64_t n, std::mt19937& rng) {
    Case c{weight, vec_dot_type(weight), n, {}, {}, {}, {}, {}};
    c.w = test::random_weight_row(weight, n, rng);
    c.x = test::random_activations(n, rng);
    c.xq.resize(row_bytes(c.act, n));
    quantize_row(c.act, c.x.data(), c.xq.data(), n, Isa::Scalar);
    c.wf.resize(size_t(n));
    dequantize_row(weight, c.w.data(), c.wf.data(), n, Isa::Scalar);
    c.xf = test::decode_activations(c.act, c.xq.data(), n);
    return c;
}

// Scale of the rounding noise of any summation order: sum |w_i a_i| plus the minimum
// terms of Q4_1/Q5_1.
double magnitude(const Case& c) {
    double m = test::min_term_magnitude(c.weight, c.w.data(), c.xq.data(), c.n);
    for (int64_t i = 0; i < c.n; ++i) m += std::fabs(double(c.wf[i]) * double(c.xf[i]));
    return m;
}

QString describe(const Case& c) {
    return QString("%1, n=%2").arg(QString::fromLatin1(dtype_name(c.weight).data(), dtype_name(c.weight).size())).arg(c.n);
}

} // namespace

class TestVecDot : public QObject {
    Q_OBJECT

private slots:
    void scalar_matches_dequantized_dot_data() { types(); }
    void scalar_matches_dequantized_dot();
    void avx2_matches_scalar_data() { types(); }
    void avx2_matches_scalar();
    void multi_rows_match_single_data() { types(); }
    void multi_rows_match_single();
    void weight_rows_match_single_data() { types(); }
    void weight_rows_match_single();
    void avx2_quantize_matches_scalar();

private:
    static void types() {
        QTest::addColumn<DType>("weight");
        for (DType t : test::weight_types()) QTest::newRow(dtype_name(t).data()) << t;
    }
};

// The integer paths are exact, so the scalar dot equals the float dot of the
// dequantized weights with the decoded activations up to rounding (tight), and the
// float dot with the original activations up to the activation quantization error
// (loose: a sum of bounded zero-mean errors, 6 sigma, plus 2^-10 for the fp16 scales).
void TestVecDot::scalar_matches_dequantized_dot() {
    QFETCH(DType, weight);
    std::mt19937 rng(1234u + uint32_t(weight));
    const VecDotFn dot = vec_dot_fn(weight, Isa::Scalar);
    for (int64_t n : lengths(weight)) {
        for (int rep = 0; rep < 3; ++rep) {
            const Case c = make_case(weight, n, rng);
            const auto step = test::activation_step(c.act, c.xq.data(), n);
            double exact = 0.0, original = 0.0, noise = 0.0, wx = 0.0;
            double max_w = 0.0, sum_x = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                exact += double(c.wf[i]) * double(c.xf[i]);
                original += double(c.wf[i]) * double(c.x[i]);
                noise += std::pow(double(c.wf[i]) * double(step[i]), 2);
                wx += std::fabs(double(c.wf[i]) * double(c.x[i]));
                max_w = std::max(max_w, std::fabs(double(c.wf[i])));
                sum_x += std::fabs(double(c.x[i]));
            }
            const double got = dot(n, c.w.data(), c.xq.data());
            const double mag = magnitude(c);
            const double tight = 2e-5 * mag + test::min_term_magnitude(weight, c.w.data(), c.xq.data(), n) / 512;
            if (std::fabs(got - exact) > tight)
                QFAIL(qPrintable(describe(c) + QString(": dot %1 vs decoded %2 (tolerance %3)")
                                                   .arg(got, 0, 'g', 9).arg(exact, 0, 'g', 9).arg(tight)));
            const double loose = 6.0 * std::sqrt(noise) + 1e-3 * (wx + max_w * sum_x) + 1e-6;
            if (std::fabs(got - original) > loose)
                QFAIL(qPrintable(describe(c) + QString(": dot %1 vs float dot %2 (tolerance %3)")
                                                   .arg(got, 0, 'g', 9).arg(original, 0, 'g', 9).arg(loose)));
        }
    }
}

void TestVecDot::avx2_matches_scalar() {
    QFETCH(DType, weight);
    SKIP_WITHOUT_AVX2();
    std::mt19937 rng(777u + uint32_t(weight));
    const VecDotFn scalar = vec_dot_fn(weight, Isa::Scalar);
    const VecDotFn avx2 = vec_dot_fn(weight, Isa::Avx2);
    QVERIFY(scalar != avx2);
    for (int64_t n : lengths(weight)) {
        for (int rep = 0; rep < 3; ++rep) {
            const Case c = make_case(weight, n, rng);
            const double want = scalar(n, c.w.data(), c.xq.data());
            const double got = avx2(n, c.w.data(), c.xq.data());
            const double tol = 2e-5 * magnitude(c) + 1e-30;
            if (std::fabs(got - want) > tol)
                QFAIL(qPrintable(describe(c) + QString(": AVX2 %1 vs scalar %2 (tolerance %3)")
                                                   .arg(got, 0, 'g', 9).arg(want, 0, 'g', 9).arg(tol)));
        }
    }
}

// Several activation rows at strided positions, each result written with a stride;
// the slots in between must stay untouched.
void TestVecDot::multi_rows_match_single() {
    QFETCH(DType, weight);
    const int64_t n = dtype_info(weight).block_size == 256 ? 512 : 576;
    const DType act = vec_dot_type(weight);
    const size_t act_stride = row_bytes(act, n) + 40;
    const int64_t out_stride = 3;
    for (Isa isa : {Isa::Scalar, Isa::Avx2}) {
        if (!isa_supported(isa)) continue;
        std::mt19937 rng(99u + uint32_t(weight));
        const auto w = test::random_weight_row(weight, n, rng);
        const VecDotFn single = vec_dot_fn(weight, isa);
        const VecDotMultiFn multi = vec_dot_multi_fn(weight, isa);
        for (int n_act : {1, 2, 3, 4, 5, 7, 8, 11}) {
            std::vector<uint8_t> acts(act_stride * size_t(n_act), 0);
            std::vector<double> want(static_cast<size_t>(n_act)), mags(static_cast<size_t>(n_act));
            for (int r = 0; r < n_act; ++r) {
                const auto x = test::random_activations(n, rng);
                uint8_t* row = acts.data() + r * act_stride;
                quantize_row(act, x.data(), row, n, Isa::Scalar);
                want[r] = single(n, w.data(), row);
                std::vector<float> wf(static_cast<size_t>(n));
                dequantize_row(weight, w.data(), wf.data(), n, Isa::Scalar);
                const auto xf = test::decode_activations(act, row, n);
                mags[r] = test::min_term_magnitude(weight, w.data(), row, n);
                for (int64_t i = 0; i < n; ++i) mags[r] += std::fabs(double(wf[i]) * double(xf[i]));
            }
            std::vector<float> out(static_cast<size_t>(n_act * out_stride), -777.0f);
            multi(n, w.data(), acts.data(), act_stride, n_act, out.data(), out_stride);
            for (int r = 0; r < n_act; ++r) {
                const double got = out[size_t(r * out_stride)];
                const double tol = 2e-5 * mags[r] + 1e-30;
                if (std::fabs(got - want[r]) > tol)
                    QFAIL(qPrintable(QString("%1 %2 rows, row %3: multi %4 vs single %5")
                                         .arg(isa_name(isa).data()).arg(n_act).arg(r)
                                         .arg(got, 0, 'g', 9).arg(want[r], 0, 'g', 9)));
                QCOMPARE(out[size_t(r * out_stride + 1)], -777.0f);
                QCOMPARE(out[size_t(r * out_stride + 2)], -777.0f);
            }
        }
    }
}

// Several weight rows at a stride against one activation row (the decode form).
void TestVecDot::weight_rows_match_single() {
    QFETCH(DType, weight);
    const int64_t n = dtype_info(weight).block_size == 256 ? 512 : 576;
    const DType act = vec_dot_type(weight);
    const size_t w_stride = row_bytes(weight, n) + 24;
    const int64_t out_stride = 2;
    for (Isa isa : {Isa::Scalar, Isa::Avx2}) {
        if (!isa_supported(isa)) continue;
        std::mt19937 rng(31u + uint32_t(weight));
        const auto x = test::random_activations(n, rng);
        std::vector<uint8_t> xq(row_bytes(act, n));
        quantize_row(act, x.data(), xq.data(), n, Isa::Scalar);
        const auto xf = test::decode_activations(act, xq.data(), n);
        const VecDotFn single = vec_dot_fn(weight, isa);
        const VecDotRowsFn rows = vec_dot_rows_fn(weight, isa);
        for (int n_rows : {1, 2, 3, 4, 5, 7, 8, 13}) {
            std::vector<uint8_t> w(w_stride * size_t(n_rows), 0);
            std::vector<double> want(static_cast<size_t>(n_rows)), mags(static_cast<size_t>(n_rows));
            for (int r = 0; r < n_rows; ++r) {
                const auto row = test::random_weight_row(weight, n, rng);
                std::copy(row.begin(), row.end(), w.begin() + ptrdiff_t(r * w_stride));
                want[r] = single(n, row.data(), xq.data());
                std::vector<float> wf(static_cast<size_t>(n));
                dequantize_row(weight, row.data(), wf.data(), n, Isa::Scalar);
                mags[r] = test::min_term_magnitude(weight, row.data(), xq.data(), n);
                for (int64_t i = 0; i < n; ++i) mags[r] += std::fabs(double(wf[i]) * double(xf[i]));
            }
            std::vector<float> out(static_cast<size_t>(n_rows * out_stride), -777.0f);
            rows(n, w.data(), w_stride, n_rows, xq.data(), out.data(), out_stride);
            for (int r = 0; r < n_rows; ++r) {
                const double got = out[size_t(r * out_stride)];
                const double tol = 2e-5 * mags[r] + 1e-30;
                if (std::fabs(got - want[r]) > tol)
                    QFAIL(qPrintable(QString("%1 %2 rows, row %3: rows kernel %4 vs single %5")
                                         .arg(isa_name(isa).data()).arg(n_rows).arg(r)
                                         .arg(got, 0, 'g', 9).arg(want[r], 0, 'g', 9)));
                QCOMPARE(out[size_t(r * out_stride + 1)], -777.0f);
            }
        }
    }
}

// Both quantizers apply the same scale expressions and rounding rules element by
// element, so the blocks must be byte-identical (no one-quantum slack needed).
void TestVecDot::avx2_quantize_matches_scalar() {
    SKIP_WITHOUT_AVX2();
    std::mt19937 rng(4242u);
    for (DType act : {DType::F32, DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
        for (int64_t n : {256, 512, 1536, 4096}) {
            for (int rep = 0; rep < 4; ++rep) {
                auto x = test::random_activations(n, rng);
                if (rep == 1)  // exact halves at scale 1: rounding ties
                    for (int64_t i = 0; i < n; ++i) x[i] = i % 32 == 0 ? 127.0f : float(i % 255) * 0.5f - 63.5f;
                if (rep == 2)  // zero blocks and tiny values
                    for (int64_t i = 0; i < n; ++i) x[i] = i < 256 ? 0.0f : x[i] * 1e-30f;
                const size_t rb = row_bytes(act, n);
                std::vector<uint8_t> a(rb, 1), b(rb, 2);
                quantize_row(act, x.data(), a.data(), n, Isa::Scalar);
                quantize_row(act, x.data(), b.data(), n, Isa::Avx2);
                if (a != b) {
                    size_t i = 0;
                    while (a[i] == b[i]) ++i;
                    QFAIL(qPrintable(QString("%1 n=%2 rep %3: first difference at byte %4")
                                         .arg(dtype_name(act).data()).arg(n).arg(rep).arg(i)));
                }
            }
        }
    }
}

QTEST_APPLESS_MAIN(TestVecDot)
#include "test_vec_dot.moc"
