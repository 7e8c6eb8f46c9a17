// The Q8_0 KV cache's kernels (cpu_ops.h): the quantizer against GGUF's Q8_0 blocks with
// elements rounded against the stored scale, written out here, and the attention kernels
// on Q8_0 keys and values against the reference and against the F32 kernels on the
// dequantized elements (bit for bit: a Q8_0 element is exact in float, so "dequantize
// then attend" is the contract).
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"

#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace {

constexpr int64_t kBlock = arbor::kQ8BlockSize;

std::vector<float> normal_vector(size_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-5 * scale + 1e-6; }

// n elements quantized in blocks of 32: the int8s, the scales, and what they stand for.
struct Quantized {
    std::vector<int8_t> q;
    std::vector<uint16_t> scales;
    std::vector<float> values;
};
Quantized quantize(const std::vector<float>& x) {
    Quantized out{std::vector<int8_t>(x.size()), std::vector<uint16_t>(x.size() / kBlock), std::vector<float>(x.size())};
    arbor::q8_0_from_f32(x.data(), out.q.data(), out.scales.data(), int64_t(x.size()));
    for (size_t i = 0; i < x.size(); ++i) out.values[i] = arbor::fp16_to_fp32(out.scales[i / kBlock]) * float(out.q[i]);
    return out;
}

} // namespace

class TestQ8KvKernels : public QObject {
    Q_OBJECT
private slots:
    // GGUF's Q8_0 blocks: d = amax / 127 stored as a half; each element is rounded
    // against that stored half (halves away from zero, clamped to 127 where the half is
    // below d), so it reads back as the nearest value the block holds; an all-zero block
    // gets d = 0 and zeros. GGUF's reference rounds against the float d instead.
    void quantizerFollowsGgufQ8_0() {
        std::vector<float> x = normal_vector(size_t(kBlock * 64), 1);
        for (int64_t i = 0; i < kBlock; ++i) x[size_t(kBlock + i)] = 0.0f;                  // a zero block
        for (int64_t i = 0; i < kBlock; ++i) x[size_t(2 * kBlock + i)] = float(i - 16) / 8;  // exact ties
        x[size_t(3 * kBlock + 5)] = 1000.0f;                                                  // one outlier
        for (int64_t i = 0; i < kBlock; ++i) x[size_t(4 * kBlock + i)] = float(i - 16) * 1e-6f;  // a subnormal half
        const Quantized got = quantize(x);
        int differ = 0;  // elements GGUF's reference rounds otherwise (one step further off)
        for (size_t b = 0; b < x.size() / size_t(kBlock); ++b) {
            float amax = 0.0f;
            for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(x[b * size_t(kBlock) + size_t(i)]));
            const float d = amax / 127.0f;
            QCOMPARE(got.scales[b], arbor::fp32_to_fp16(d));
            const float stored = arbor::fp16_to_fp32(got.scales[b]);
            for (int64_t i = 0; i < kBlock; ++i) {
                const size_t at = b * size_t(kBlock) + size_t(i);
                const float want = stored != 0.0f ? std::clamp(std::round(x[at] / stored), -127.0f, 127.0f) : 0.0f;
                QCOMPARE(int(got.q[at]), int(want));
                QVERIFY(std::abs(int(got.q[at])) <= 127);
                QVERIFY2(std::fabs(got.values[at] - x[at]) <= 0.5f * stored * 1.0001f + 127.0f * std::fabs(d - stored),
                         qPrintable(QString("element %1: %2 for %3").arg(at).arg(got.values[at]).arg(x[at])));
                differ += d != 0.0f && int(got.q[at]) != int(std::round(x[at] * (1.0f / d)));
            }
        }
        qInfo("%d of %zu elements rounded otherwise than by GGUF's reference", differ, x.size());
        QVERIFY(differ > 0);  // these inputs tell the two rules apart
        QCOMPARE(got.scales[1], uint16_t(0));
        for (int64_t i = 0; i < kBlock; ++i) QCOMPARE(int(got.q[size_t(kBlock + i)]), 0);
    }

    // Scores over Q8_0 key columns (scales in rows of the same columns, one row per block
    // of 32 elements): each kernel gives the bits of the F32 kernel on the dequantized keys,
    // AVX2 close to the reference and a key's score independent of the keys scored with it.
    void scoreKernels_data() {
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("first");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int keys : {1, 5, 8, 9, 16, 23})
            for (int first : {0, 3, 8})
                for (int dim : {32, 64, 128})
                    for (int heads : {1, 3, 7})
                        QTest::newRow(qPrintable(
                            QString("%1 keys from %2 x %3 dims, %4 heads").arg(keys).arg(first).arg(dim).arg(heads)))
                            << keys << first << dim << heads;
    }
    void scoreKernels() {
        QFETCH(int, keys);
        QFETCH(int, first);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ld = (first + keys + 7) / 8 * 8, ldo = keys + 2;
        const auto q = normal_vector(size_t(heads * dim), 3);
        // Each column quantized as one position's key, then laid out as a page stores it.
        std::vector<int8_t> columns(size_t(dim * ld));
        std::vector<uint16_t> scales(size_t(dim / kBlock * ld));
        std::vector<float> dequantized(columns.size());
        for (int64_t j = 0; j < ld; ++j) {
            const Quantized key = quantize(normal_vector(size_t(dim), uint32_t(100 + j), 0.5f + float(j % 3)));
            for (int64_t d = 0; d < dim; ++d) {
                columns[size_t(d * ld + j)] = key.q[size_t(d)];
                dequantized[size_t(d * ld + j)] = key.values[size_t(d)];
            }
            for (int64_t b = 0; b < dim / kBlock; ++b) scales[size_t(b * ld + j)] = key.scales[size_t(b)];
        }
        auto scores = [&](auto kernel, int64_t n_q, const float* qh, int64_t from, int64_t n) {
            std::vector<float> out(size_t(n_q * ldo), -7.0f);
            kernel(qh, n_q, columns.data(), scales.data(), ld, from, n, dim, out.data(), ldo);
            return out;
        };
        auto f32_scores = [&](auto kernel) {
            std::vector<float> out(size_t(heads * ldo), -7.0f);
            kernel(q.data(), heads, dequantized.data(), ld, first, keys, dim, out.data(), ldo);
            return out;
        };
        const auto ref = scores(arbor::ref::dot_columns_q8_0, heads, q.data(), first, keys);
        QCOMPARE(ref, f32_scores(arbor::ref::dot_columns_f32));
        for (int h = 0; h < heads; ++h)
            for (int j = 0; j < keys; ++j) {
                double want = 0.0;
                for (int d = 0; d < dim; ++d)
                    want += double(q[size_t(h * dim + d)]) * double(dequantized[size_t(d * ld + first + j)]);
                QVERIFY(close(ref[size_t(h * ldo + j)], want, dim));
            }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar kernels run here");

        const auto got = scores(arbor::avx2::dot_columns_q8_0, heads, q.data(), first, keys);
        const auto want = f32_scores(arbor::avx2::dot_columns_f32);
        for (size_t i = 0; i < got.size(); ++i) {
            QCOMPARE(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]));
            QVERIFY(close(got[i], ref[i], dim));
        }
        for (int h = 0; h < heads; ++h)
            for (int j = 0; j < keys; ++j) {
                const auto one = scores(arbor::avx2::dot_columns_q8_0, 1, &q[size_t(h * dim)], first + j, 1);
                QCOMPARE(std::bit_cast<uint32_t>(one[0]), std::bit_cast<uint32_t>(got[size_t(h * ldo + j)]));
            }
    }

    // Weighted sums of Q8_0 value rows (each row's scales after all the rows' int8s), and
    // their conversion to floats: the F32 kernels' bits on the dequantized rows.
    void valueKernels_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int rows : {1, 5, 8, 9, 16, 23})
            for (int dim : {32, 64, 96, 128})
                for (int heads : {1, 3, 4, 7})
                    QTest::newRow(qPrintable(QString("%1 values x %2 dims, %3 heads").arg(rows).arg(dim).arg(heads)))
                        << rows << dim << heads;
    }
    void valueKernels() {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ld = rows + 2;
        const Quantized m = quantize(normal_vector(size_t(rows * dim), 14, 2.0f));
        const auto weights = normal_vector(size_t(heads * ld), 15);
        const auto out_start = normal_vector(size_t(heads * dim), 16);

        std::vector<float> widened(m.values.size(), -1.0f);
        arbor::ref::f32_from_q8_0(m.q.data(), m.scales.data(), rows, dim, widened.data());
        QCOMPARE(widened, m.values);
        auto out_ref = out_start, out_ref_f32 = out_start;
        arbor::ref::accumulate_rows_q8_0(weights.data(), ld, heads, m.q.data(), m.scales.data(), rows, dim,
                                         out_ref.data());
        arbor::ref::accumulate_rows_f32(weights.data(), ld, heads, m.values.data(), rows, dim, out_ref_f32.data());
        QCOMPARE(out_ref, out_ref_f32);
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar kernels run here");

        std::vector<float> got_widened(m.values.size(), -1.0f);
        arbor::avx2::f32_from_q8_0(m.q.data(), m.scales.data(), rows, dim, got_widened.data());
        QCOMPARE(got_widened, m.values);
        auto out = out_start, out_f32 = out_start;
        arbor::avx2::accumulate_rows_q8_0(weights.data(), ld, heads, m.q.data(), m.scales.data(), rows, dim, out.data());
        arbor::avx2::accumulate_rows_f32(weights.data(), ld, heads, m.values.data(), rows, dim, out_f32.data());
        for (size_t i = 0; i < out.size(); ++i) {
            QCOMPARE(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(out_f32[i]));
            QVERIFY(close(out[i], out_ref[i], rows));
        }
        // A head's sums do not depend on the heads beside it.
        for (int h = 0; h < heads; ++h) {
            std::vector<float> head_out(out_start.begin() + h * dim, out_start.begin() + (h + 1) * dim);
            arbor::avx2::accumulate_rows_q8_0(&weights[size_t(h * ld)], ld, 1, m.q.data(), m.scales.data(), rows, dim,
                                              head_out.data());
            for (int i = 0; i < dim; ++i)
                QCOMPARE(std::bit_cast<uint32_t>(head_out[size_t(i)]), std::bit_cast<uint32_t>(out[size_t(h * dim + i)]));
        }
    }

    // The AVX-512 kernels on Q8_0 keys and values bit for bit against AVX2's, with strides
    // that are and are not a multiple of sixteen and ranges that start and end inside a
    // group of sixteen.
    void avx512KernelsEqualAvx2_data() {
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("first");
        QTest::addColumn<int>("ld");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int keys : {1, 9, 16, 23, 40})
            for (int first : {0, 3, 16})
                for (int pad : {0, 8})
                    for (int dim : {32, 64, 96, 128})
                        for (int heads : {1, 4, 7, 9}) {
                            const int ld = (first + keys + 15) / 16 * 16 + pad;
                            QTest::newRow(qPrintable(QString("%1 keys from %2, ld %3 x %4 dims, %5 heads")
                                                         .arg(keys).arg(first).arg(ld).arg(dim).arg(heads)))
                                << keys << first << ld << dim << heads;
                        }
    }
    void avx512KernelsEqualAvx2() {
        if (!arbor::avx512::available())
            QSKIP("this CPU has no AVX-512 (F, BW, DQ, VL, VNNI): its attention kernels cannot run here");
        QFETCH(int, keys);
        QFETCH(int, first);
        QFETCH(int, ld);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ldo = keys + 3;
        const auto q = normal_vector(size_t(heads * dim), 31);
        // Key columns: each column quantized as one position's key (as in scoreKernels).
        std::vector<int8_t> columns(size_t(dim * ld));
        std::vector<uint16_t> scales(size_t(dim / kBlock * ld));
        for (int64_t j = 0; j < ld; ++j) {
            const Quantized key = quantize(normal_vector(size_t(dim), uint32_t(200 + j), 0.5f + float(j % 4)));
            for (int64_t d = 0; d < dim; ++d) columns[size_t(d * ld + j)] = key.q[size_t(d)];
            for (int64_t b = 0; b < dim / kBlock; ++b) scales[size_t(b * ld + j)] = key.scales[size_t(b)];
        }
        auto scores = [&](auto kernel) {
            std::vector<float> out(size_t(heads * ldo), -7.0f);
            kernel(q.data(), heads, columns.data(), scales.data(), ld, first, keys, dim, out.data(), ldo);
            return out;
        };
        const auto got = scores(arbor::avx512::dot_columns_q8_0), want = scores(arbor::avx2::dot_columns_q8_0);
        for (size_t i = 0; i < got.size(); ++i) QCOMPARE(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]));

        const Quantized m = quantize(normal_vector(size_t(keys * dim), 32, 2.0f));
        const auto weights = normal_vector(size_t(heads * ldo), 33);
        auto out = normal_vector(size_t(heads * dim), 34), out_avx2 = out;
        arbor::avx512::accumulate_rows_q8_0(weights.data(), ldo, heads, m.q.data(), m.scales.data(), keys, dim,
                                            out.data());
        arbor::avx2::accumulate_rows_q8_0(weights.data(), ldo, heads, m.q.data(), m.scales.data(), keys, dim,
                                          out_avx2.data());
        for (size_t i = 0; i < out.size(); ++i)
            QCOMPARE(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(out_avx2[i]));
    }
};

QTEST_APPLESS_MAIN(TestQ8KvKernels)
#include "test_q8_kv_kernels.moc"
