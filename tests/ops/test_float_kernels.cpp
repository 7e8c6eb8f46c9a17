// The float-activation kernels: fused quantized dots and the tile product, AVX2 against
// the scalar references, and the references against dequantize-then-multiply.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/float_dot.h"
#include "arbor/kernels/gemm_f32.h"
#include "arbor/kernels/quant.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

std::vector<float> normal_vector(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// A weight row of `type` quantized from normal data (the Q8 quantizer writes valid
// Q8_0 blocks; Q4_0/Q4_1 rows come from random codes with fixed sane scales).
std::vector<uint8_t> weight_row(arbor::DType type, int64_t n, uint32_t seed) {
    std::vector<uint8_t> bytes(arbor::row_bytes(type, n));
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto& b : bytes) b = uint8_t(byte(rng));
    const auto& info = arbor::dtype_info(type);
    const uint16_t d = 0x2a00;  // 0.046875 in IEEE half
    const uint16_t m = 0xb400;  // -0.25
    for (size_t off = 0; off < bytes.size(); off += info.block_bytes) {
        std::memcpy(&bytes[off], &d, 2);
        if (type == arbor::DType::Q4_1) std::memcpy(&bytes[off + 2], &m, 2);
    }
    return bytes;
}

double exact_dot(arbor::DType type, const std::vector<uint8_t>& w, const std::vector<float>& x) {
    std::vector<float> deq(x.size());
    arbor::dequantize_row(type, w.data(), deq.data(), int64_t(x.size()), arbor::Isa::Scalar);
    double s = 0.0;
    for (size_t i = 0; i < x.size(); ++i) s += double(deq[i]) * double(x[i]);
    return s;
}

bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-5 * scale + 1e-6; }

} // namespace

class TestFloatKernels : public QObject {
    Q_OBJECT
private slots:
    void fusedDots_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n");
        for (auto t : {arbor::DType::Q4_0, arbor::DType::Q4_1, arbor::DType::Q8_0})
            for (int n : {32, 64, 576, 1536})
                QTest::newRow(qPrintable(QString("%1 n=%2").arg(arbor::dtype_name(t).data()).arg(n))) << int(t) << n;
    }
    void fusedDots() {
        QFETCH(int, type);
        QFETCH(int, n);
        const auto dtype = arbor::DType(type);
        const auto w = weight_row(dtype, n, 11 + uint32_t(n));
        const auto x = normal_vector(size_t(n), 7);
        std::vector<float> sums(size_t(n / 32));
        arbor::block_sums_32(x.data(), n, sums.data());
        const double want = exact_dot(dtype, w, x);
        double magnitude = 0.0;
        for (float v : x) magnitude += std::fabs(v);

        arbor::FloatDotFn refs[] = {arbor::ref::dot_q4_0_f32, arbor::ref::dot_q4_1_f32, arbor::ref::dot_q8_0_f32};
        arbor::FloatDotFn simds[] = {arbor::avx2::dot_q4_0_f32, arbor::avx2::dot_q4_1_f32, arbor::avx2::dot_q8_0_f32};
        const int k = dtype == arbor::DType::Q4_0 ? 0 : dtype == arbor::DType::Q4_1 ? 1 : 2;
        const float ref = refs[k](n, w.data(), x.data(), sums.data());
        QVERIFY2(close(ref, want, magnitude), qPrintable(QString("ref %1 vs exact %2").arg(ref).arg(want)));
        QVERIFY(arbor::float_dot_fn(dtype) != nullptr);
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        const float simd = simds[k](n, w.data(), x.data(), sums.data());
        QVERIFY2(close(simd, want, magnitude), qPrintable(QString("avx2 %1 vs exact %2").arg(simd).arg(want)));
    }

    // Batch invariance: one activation row alone or among others, scalar or AVX2, gives
    // the same bits (the documented operation order).
    void blockKernelsAreBitIdenticalAcrossPaths_data() {
        QTest::addColumn<int>("type");
        for (auto t : {arbor::DType::Q4_0, arbor::DType::Q4_1, arbor::DType::Q8_0})
            QTest::newRow(arbor::dtype_name(t).data()) << int(t);
    }
    void blockKernelsAreBitIdenticalAcrossPaths() {
        QFETCH(int, type);
        const auto dtype = arbor::DType(type);
        const int64_t n = 576, rows = 11;
        const auto w = weight_row(dtype, n, 5);
        const auto x = normal_vector(size_t(n * rows), 9);
        std::vector<float> sums(size_t(rows * n / 32));
        for (int64_t j = 0; j < rows; ++j) arbor::block_sums_32(&x[size_t(j * n)], n, &sums[size_t(j * n / 32)]);
        std::vector<float> ref_multi(static_cast<size_t>(rows)), multi(static_cast<size_t>(rows));
        const size_t stride = w.size();  // one weight row
        arbor::ref::dot_multi_rows(dtype, n, w.data(), stride, 1, x.data(), n, sums.data(), int(rows), ref_multi.data(), 1);
        arbor::dot_multi_rows(dtype, n, w.data(), stride, 1, x.data(), n, sums.data(), int(rows), multi.data(), 1);
        const auto single = arbor::float_dot_fn(dtype);
        for (int64_t j = 0; j < rows; ++j) {
            const float one = single(n, w.data(), &x[size_t(j * n)], &sums[size_t(j * n / 32)]);
            QCOMPARE(multi[size_t(j)], one);
            QCOMPARE(ref_multi[size_t(j)], one);
            // Any prefix of the batch gives the same value for this row.
            std::vector<float> part(static_cast<size_t>(j + 1));
            arbor::dot_multi_rows(dtype, n, w.data(), stride, 1, x.data(), n, sums.data(), int(j + 1), part.data(), 1);
            QCOMPARE(part[size_t(j)], one);
        }
    }

    void typesWithoutFusedKernel() { QVERIFY(arbor::float_dot_fn(arbor::DType::Q6_K) == nullptr); }

    void gemmTile_data() {
        QTest::addColumn<int>("n_w");
        QTest::addColumn<int>("n_x");
        QTest::addColumn<int>("k");
        for (int n_w : {1, 3, 4, 9})
            for (int n_x : {1, 2, 3, 7})
                for (int k : {8, 13, 64})
                    QTest::newRow(qPrintable(QString("%1x%2 k%3").arg(n_w).arg(n_x).arg(k))) << n_w << n_x << k;
    }
    void gemmTile() {
        QFETCH(int, n_w);
        QFETCH(int, n_x);
        QFETCH(int, k);
        const int64_t ldw = k + 3, ldx = k + 5, ldy = n_w + 2;
        const auto w = normal_vector(size_t(n_w * ldw), 1), x = normal_vector(size_t(n_x * ldx), 2);
        std::vector<float> want(size_t(n_x * ldy), -7.0f), got = want;
        arbor::ref::gemm_tile_f32(w.data(), ldw, n_w, x.data(), ldx, n_x, k, want.data(), ldy);
        for (int j = 0; j < n_x; ++j)
            for (int r = 0; r < n_w; ++r) {
                double s = 0.0;
                for (int i = 0; i < k; ++i) s += double(w[size_t(r * ldw + i)]) * x[size_t(j * ldx + i)];
                QVERIFY(close(want[size_t(j * ldy + r)], s, k));
            }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        arbor::avx2::gemm_tile_f32(w.data(), ldw, n_w, x.data(), ldx, n_x, k, got.data(), ldy);
        for (size_t i = 0; i < got.size(); ++i) QVERIFY(close(got[i], want[i], k));  // gaps stay -7 in both
    }

    void attentionRowKernels_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        for (int rows : {1, 5, 16})
            for (int dim : {8, 64, 72, 128, 12}) QTest::newRow(qPrintable(QString("%1x%2").arg(rows).arg(dim))) << rows << dim;
    }
    void attentionRowKernels() {
        QFETCH(int, rows);
        QFETCH(int, dim);
        const auto q = normal_vector(size_t(dim), 3), m = normal_vector(size_t(rows * dim), 4);
        const auto weights = normal_vector(size_t(rows), 5);
        std::vector<float> scores_ref(static_cast<size_t>(rows)), out_ref = normal_vector(size_t(dim), 6);
        auto out_simd = out_ref;
        arbor::ref::dot_rows_f32(q.data(), m.data(), rows, dim, scores_ref.data());
        for (int j = 0; j < rows; ++j) QCOMPARE(scores_ref[size_t(j)], arbor::ref::dot_f32(q.data(), &m[size_t(j * dim)], dim));
        arbor::ref::accumulate_rows_f32(weights.data(), m.data(), rows, dim, out_ref.data());
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        std::vector<float> scores_simd(static_cast<size_t>(rows));
        arbor::avx2::dot_rows_f32(q.data(), m.data(), rows, dim, scores_simd.data());
        arbor::avx2::accumulate_rows_f32(weights.data(), m.data(), rows, dim, out_simd.data());
        for (int j = 0; j < rows; ++j) QVERIFY(close(scores_simd[size_t(j)], scores_ref[size_t(j)], dim));
        for (int i = 0; i < dim; ++i) QVERIFY(close(out_simd[size_t(i)], out_ref[size_t(i)], rows));
    }
};

QTEST_APPLESS_MAIN(TestFloatKernels)
#include "test_float_kernels.moc"
