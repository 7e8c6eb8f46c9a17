// The float kernels: AVX2 variants against their scalar references, and the portable
// kernels against their defining formulas.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/gelu_tanh_mul.h"

#include <QtTest>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

bool close(float a, float b, float abs_tol, float rel_tol) {
    return std::fabs(a - b) <= abs_tol + rel_tol * std::fabs(b);
}

} // namespace

class TestCpuOps : public QObject {
    Q_OBJECT
private slots:
    void avx2MatchesReference_data() {
        QTest::addColumn<int>("n");
        for (int n : {1, 7, 8, 15, 16, 17, 64, 100, 576, 1536}) QTest::newRow(qPrintable(QString::number(n))) << n;
    }
    void avx2MatchesReference() {
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        QFETCH(int, n);
        const auto a = random_vector(size_t(n), 1);
        auto y_ref = random_vector(size_t(n), 3), y_simd = y_ref;
        arbor::ref::axpy_f32(0.37f, a.data(), y_ref.data(), n);
        arbor::avx2::axpy_f32(0.37f, a.data(), y_simd.data(), n);
        for (int i = 0; i < n; ++i) QVERIFY(close(y_simd[size_t(i)], y_ref[size_t(i)], 1e-6f, 1e-6f));

        arbor::ref::scale_f32(-1.5f, y_ref.data(), n);
        arbor::avx2::scale_f32(-1.5f, y_simd.data(), n);
        for (int i = 0; i < n; ++i) QVERIFY(close(y_simd[size_t(i)], y_ref[size_t(i)], 1e-6f, 1e-6f));
    }

    void rmsNormMatchesFormula() {
        const float x[] = {1.0f, -2.0f, 3.0f, -4.0f}, w[] = {1.0f, 0.5f, 2.0f, 1.0f};
        float y[4];
        arbor::rms_norm(x, w, y, 4, 0.0f);
        const float rms = std::sqrt((1.0f + 4.0f + 9.0f + 16.0f) / 4.0f);
        for (int i = 0; i < 4; ++i) QVERIFY(close(y[i], x[i] / rms * w[i], 1e-6f, 1e-6f));
    }

    void softmaxSumsToOneAndKeepsOrder() {
        float x[] = {1000.0f, 1001.0f, 999.0f};  // large values: must not overflow
        const arbor::SoftmaxStats stats = arbor::softmax(x, 3);
        QCOMPARE(stats.max, 1001.0f);
        QVERIFY(close(stats.sum, std::exp(-1.0f) + 1.0f + std::exp(-2.0f), 1e-6f, 1e-6f));
        QCOMPARE(arbor::softmax(x, 0).sum, 0.0f);
        QVERIFY(close(x[0] + x[1] + x[2], 1.0f, 1e-6f, 0));
        QVERIFY(x[1] > x[0] && x[0] > x[2]);
        QVERIFY(close(x[1] / x[0], std::exp(1.0f), 1e-4f, 1e-4f));
    }

    void siluMul() {
        float x[] = {0.0f, 1.0f, -2.0f};
        const float g[] = {3.0f, 2.0f, 1.0f};
        arbor::silu_mul(x, g, 3);
        QVERIFY(close(x[0], 0.0f, 1e-7f, 0));
        QVERIFY(close(x[1], 2.0f / (1.0f + std::exp(-1.0f)), 1e-6f, 1e-6f));
        QVERIFY(close(x[2], -2.0f / (1.0f + std::exp(2.0f)), 1e-6f, 1e-6f));
    }

    // GELU in its tanh form against values computed in double (gelu_tanh(1) = 0.8411920,
    // gelu_tanh(-3) = -0.0036374), times the gate; large |x| saturates to x and 0.
    void geluTanhMul() {
        const float inputs[] = {0.0f, 1.0f, -1.0f, 0.5f, -3.0f, 2.5f, 12.0f, -12.0f, 1e-4f};
        float x[std::size(inputs)];
        float g[std::size(inputs)];
        for (size_t i = 0; i < std::size(inputs); ++i) {
            x[i] = inputs[i];
            g[i] = 0.5f + float(i);
        }
        arbor::gelu_tanh_mul(x, g, int64_t(std::size(inputs)));
        for (size_t i = 0; i < std::size(inputs); ++i) {
            const double v = inputs[i];
            const double want = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))) * g[i];
            // 1 + tanh cancels for negative x: the float result is accurate to a few ulp of x * g.
            QVERIFY2(close(x[i], float(want), 1e-6f * std::fabs(float(v) * g[i]), 2e-6f), qPrintable(QString("x = %1: %2, want %3").arg(v).arg(x[i]).arg(want)));
        }
        QVERIFY(close(x[1], 0.8411920f * g[1], 1e-6f, 0));
        QVERIFY(close(x[4], -0.0036374f * g[4], 1e-4f, 0));
    }

    void ropeRotatesThePairsOfEachLayout() {
        // Head of 4: pairs (0,1),(2,3) adjacent, or (0,2),(1,3) in neox layout.
        const float angle0 = 0.3f, angle1 = 1.1f;
        const float cs[] = {std::cos(angle0), std::sin(angle0), std::cos(angle1), std::sin(angle1)};
        float adj[] = {1.0f, 2.0f, 3.0f, 4.0f};
        arbor::rope_apply(adj, cs, 4, false);
        QVERIFY(close(adj[0], 1 * cs[0] - 2 * cs[1], 1e-6f, 0));
        QVERIFY(close(adj[1], 1 * cs[1] + 2 * cs[0], 1e-6f, 0));
        QVERIFY(close(adj[2], 3 * cs[2] - 4 * cs[3], 1e-6f, 0));
        float neox[] = {1.0f, 2.0f, 3.0f, 4.0f};
        arbor::rope_apply(neox, cs, 4, true);
        QVERIFY(close(neox[0], 1 * cs[0] - 3 * cs[1], 1e-6f, 0));
        QVERIFY(close(neox[2], 1 * cs[1] + 3 * cs[0], 1e-6f, 0));
        QVERIFY(close(neox[1], 2 * cs[2] - 4 * cs[3], 1e-6f, 0));
        // Rotation keeps the norm.
        QVERIFY(close(adj[0] * adj[0] + adj[1] * adj[1], 5.0f, 1e-5f, 0));
    }
};

QTEST_APPLESS_MAIN(TestCpuOps)
#include "test_cpu_ops.moc"
