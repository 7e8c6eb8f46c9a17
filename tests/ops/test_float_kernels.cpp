// The float-activation product (float_dot.h): the scalar reference against an exact
// dot of the dequantized weights, the AVX2 tiles bit for bit against the reference for
// every weight type and tile shape, and a row's result independent of its batch; the
// cache-line alignment of kernel storage; plus the attention row kernels (on F32 and on F16
// rows) and the float-to-half conversion of the KV cache.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/float_dot.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/quant.h"

#include "quant_test_util.h"

#include <QtTest>

#include <bit>
#include <cmath>
#include <limits>
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

bool close(double a, double b, double scale) { return std::fabs(a - b) <= 1e-5 * scale + 1e-6; }

// Data rows "n=N spread S" for every length and spread.
void add_length_spread_rows(std::initializer_list<int> lengths, std::initializer_list<float> spreads) {
    QTest::addColumn<int>("n");
    QTest::addColumn<float>("spread");
    for (int n : lengths)
        for (float spread : spreads) QTest::newRow(qPrintable(QString("n=%1 spread %2").arg(n).arg(spread))) << n << spread;
}

// The first element where got is farther from want than rel * |want| + abs, described;
// empty when there is none.
QString first_difference(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs) {
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(double(got[i]) - double(want[i])) <= rel * std::fabs(double(want[i])) + abs))
            return QString("element %1: %2 vs %3").arg(i).arg(double(got[i]), 0, 'g', 9).arg(double(want[i]), 0, 'g', 9);
    return {};
}

// Rows of `type` one after another (row_stride = row_bytes).
std::vector<uint8_t> weight_rows(arbor::DType type, int64_t n, int64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> out;
    for (int64_t r = 0; r < rows; ++r) {
        const auto row = arbor::test::random_weight_row(type, n, rng);
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

const arbor::DType kTypes[] = {arbor::DType::F32,  arbor::DType::F16,  arbor::DType::BF16, arbor::DType::Q4_0,
                               arbor::DType::Q4_1, arbor::DType::Q5_0, arbor::DType::Q5_1, arbor::DType::Q8_0,
                               arbor::DType::Q4_K, arbor::DType::Q5_K, arbor::DType::Q6_K,
                               arbor::DType::Q2_K, arbor::DType::Q3_K, arbor::DType::IQ4_NL,
                               arbor::DType::IQ4_XS, arbor::DType::MXFP4};

// Row lengths valid for the type: block multiples, and odd lengths for plain floats.
std::vector<int> lengths(arbor::DType type) {
    if (type == arbor::DType::F32) return {8, 13, 40, 256, 576};
    if (arbor::dtype_info(type).block_size == 256) return {256, 1280, 1536};
    return {32, 96, 576};
}

} // namespace

class TestFloatKernels : public QObject {
    Q_OBJECT
private slots:
    void referenceMatchesExactDot_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n");
        for (auto t : kTypes)
            for (int n : lengths(t))
                QTest::newRow(qPrintable(QString("%1 n=%2").arg(arbor::dtype_name(t).data()).arg(n))) << int(t) << n;
    }
    void referenceMatchesExactDot() {
        QFETCH(int, type);
        QFETCH(int, n);
        const auto dtype = arbor::DType(type);
        const auto w = weight_rows(dtype, n, 1, 11 + uint32_t(n));
        const auto x = normal_vector(size_t(n), 7);
        std::vector<float> v(static_cast<size_t>(n));
        arbor::dequantize_row(dtype, w.data(), v.data(), n, arbor::Isa::Scalar);
        double want = 0.0, magnitude = 0.0;
        for (int i = 0; i < n; ++i) {
            want += double(v[size_t(i)]) * double(x[size_t(i)]);
            magnitude += std::fabs(double(v[size_t(i)]) * double(x[size_t(i)]));
        }
        const float got = arbor::ref::float_dot(dtype, n, w.data(), x.data());
        QVERIFY2(close(got, want, magnitude), qPrintable(QString("ref %1 vs exact %2").arg(got).arg(want)));
    }

    // Every tile shape of the AVX2 kernels gives the reference's bits for every pair, and
    // leaves the gaps between output rows alone.
    void avx2TilesAreBitIdenticalToReference_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n");
        for (auto t : kTypes)
            for (int n : lengths(t))
                QTest::newRow(qPrintable(QString("%1 n=%2").arg(arbor::dtype_name(t).data()).arg(n))) << int(t) << n;
    }
    void avx2TilesAreBitIdenticalToReference() {
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        QFETCH(int, type);
        QFETCH(int, n);
        const auto dtype = arbor::DType(type);
        const size_t stride = arbor::row_bytes(dtype, n);
        arbor::AlignedFloats buffer;
        for (int n_w : {1, 2, 3, 5, 17, 61})
            for (int n_x : {1, 2, 3, 4, 5, 7, 8, 9, 13, 20, 45}) {
                const auto w = weight_rows(dtype, n, n_w, uint32_t(n_w * 31 + n_x));
                const int64_t ldx = n + 3, ldy = n_w + 2;
                const auto x = normal_vector(size_t(n_x * ldx), uint32_t(n_x));
                std::vector<float> want(size_t(n_x * ldy), -7.0f), got = want;
                arbor::ref::float_dot_tile(dtype, n, w.data(), stride, n_w, x.data(), ldx, n_x, want.data(), ldy, buffer);
                arbor::avx2::float_dot_tile(dtype, n, w.data(), stride, n_w, x.data(), ldx, n_x, got.data(), ldy, buffer);
                for (size_t i = 0; i < got.size(); ++i)
                    QVERIFY2(std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i]),
                             qPrintable(QString("%1 weight rows x %2 activation rows: output %3 is %4, reference %5")
                                            .arg(n_w).arg(n_x).arg(i).arg(double(got[i]), 0, 'g', 9)
                                            .arg(double(want[i]), 0, 'g', 9)));
            }
    }

    // Batch invariance through the dispatcher: an activation row alone, or at any
    // position among others, gives the same bits (batches of 1 to 45 rows reach every
    // path: small tiles, eight rows at a time, the shared buffer).
    void rowResultDoesNotDependOnItsBatch() {
        const int64_t n = 576, n_w = 6, n_x = 45;
        for (auto dtype : {arbor::DType::Q4_1, arbor::DType::Q8_0, arbor::DType::Q6_K}) {
            const int64_t len = dtype == arbor::DType::Q6_K ? 1536 : n;
            const size_t stride = arbor::row_bytes(dtype, len);
            const auto w = weight_rows(dtype, len, n_w, 5);
            const auto x = normal_vector(size_t(n_x * len), 9);
            arbor::AlignedFloats buffer;
            std::vector<float> all(size_t(n_x * n_w));
            arbor::float_dot_tile(dtype, len, w.data(), stride, n_w, x.data(), len, n_x, all.data(), n_w, buffer);
            for (int64_t j = 0; j < n_x; ++j) {
                std::vector<float> alone(static_cast<size_t>(n_w)), prefix(size_t((j + 1) * n_w));
                arbor::float_dot_tile(dtype, len, w.data(), stride, n_w, &x[size_t(j * len)], len, 1, alone.data(), n_w,
                                      buffer);
                arbor::float_dot_tile(dtype, len, w.data(), stride, n_w, x.data(), len, j + 1, prefix.data(), n_w, buffer);
                for (int64_t r = 0; r < n_w; ++r) {
                    const uint32_t in_batch = std::bit_cast<uint32_t>(all[size_t(j * n_w + r)]);
                    QCOMPARE(std::bit_cast<uint32_t>(alone[size_t(r)]), in_batch);
                    QCOMPARE(std::bit_cast<uint32_t>(prefix[size_t(j * n_w + r)]), in_batch);
                }
            }
        }
    }

    // Kernel storage starts on a cache line at every size, the large ones (which the
    // C library maps 16 bytes past a page boundary) included, and after growing.
    void alignedStorageStartsOnACacheLine() {
        auto offset = [](const float* p) { return reinterpret_cast<uintptr_t>(p) % arbor::kCacheLine; };
        arbor::AlignedFloats grown;
        for (size_t n : {1, 5, 1000, 100000, 3000000}) {
            arbor::AlignedFloats v(n);
            QCOMPARE(offset(v.data()), uintptr_t(0));
            grown.resize(n);
            QCOMPARE(offset(grown.data()), uintptr_t(0));
            QCOMPARE(offset(arbor::make_aligned_floats_for_overwrite(n).get()), uintptr_t(0));
        }
    }

    // The AVX2 softmax (polynomial exp, float sums) against the reference (libm exp,
    // double sum), over rows of many lengths and spreads, tails included.
    void softmaxMatchesReference_data() { add_length_spread_rows({1, 7, 8, 9, 100, 1001}, {0.1f, 5.0f, 60.0f}); }
    void softmaxMatchesReference() {
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        QFETCH(int, n);
        QFETCH(float, spread);
        auto want = normal_vector(size_t(n), uint32_t(n));
        for (auto& v : want) v = v * spread + 300.0f;  // an offset the maximum must absorb
        auto got = want;
        const arbor::SoftmaxStats want_stats = arbor::ref::softmax(want.data(), n);
        const arbor::SoftmaxStats got_stats = arbor::avx2::softmax(got.data(), n);
        const QString diff = first_difference(got, want, 1e-6, 1e-9);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        QCOMPARE(got_stats.max, want_stats.max);
        QVERIFY2(std::fabs(got_stats.sum - want_stats.sum) <= 1e-5f * want_stats.sum,
                 qPrintable(QString("sum %1, reference %2").arg(got_stats.sum).arg(want_stats.sum)));
        double sum = 0.0;
        for (float v : got) sum += v;
        QVERIFY(std::fabs(sum - 1.0) < 1e-5);
    }

    // The AVX2 SiLU gate (polynomial exp) against the reference (libm exp), over values
    // from deep in the negative tail to large positives, tails of every length.
    void siluMulMatchesReference_data() { add_length_spread_rows({1, 7, 8, 9, 100, 1536}, {0.5f, 4.0f, 40.0f}); }
    void siluMulMatchesReference() {
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        QFETCH(int, n);
        QFETCH(float, spread);
        auto want = normal_vector(size_t(n), uint32_t(n));
        for (auto& v : want) v *= spread;
        if (n > 2) want[0] = -120.0f, want[1] = 0.0f;
        const auto g = normal_vector(size_t(n), uint32_t(n + 1));
        auto got = want;
        arbor::ref::silu_mul(want.data(), g.data(), n);
        arbor::avx2::silu_mul(got.data(), g.data(), n);
        const QString diff = first_difference(got, want, 1e-6, 1e-30);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // The AVX2 RMS norm (four double lanes) against the reference (one double chain),
    // tails of every length and magnitudes from tiny to large.
    void rmsNormMatchesReference_data() { add_length_spread_rows({1, 7, 16, 17, 576, 1536}, {1e-3f, 1.0f, 300.0f}); }
    void rmsNormMatchesReference() {
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");
        QFETCH(int, n);
        QFETCH(float, spread);
        auto x = normal_vector(size_t(n), uint32_t(n));
        for (auto& v : x) v *= spread;
        const auto weight = normal_vector(size_t(n), uint32_t(n + 1));
        std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        arbor::ref::rms_norm(x.data(), weight.data(), want.data(), n, 1e-5f);
        arbor::avx2::rms_norm(x.data(), weight.data(), got.data(), n, 1e-5f);
        const QString diff = first_difference(got, want, 1e-6, 1e-30);
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
    }

    // The score kernels of a KV group's query heads over a page's key columns: the
    // reference against a double-precision sum, AVX2 bit for bit against the contract's
    // chain of fused multiply-adds, each score independent of the heads, columns and
    // stride around it, F16 keys giving the bits of the same values as F32, and the
    // columns outside [first, first + n) left alone.
    void attentionScoreKernels_data() {
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("first");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int keys : {1, 5, 8, 9, 16, 23})
            for (int first : {0, 3, 8})
                for (int dim : {8, 64, 72, 12})
                    for (int heads : {1, 3, 4, 7})
                        QTest::newRow(qPrintable(
                            QString("%1 keys from %2 x %3 dims, %4 heads").arg(keys).arg(first).arg(dim).arg(heads)))
                            << keys << first << dim << heads;
    }
    void attentionScoreKernels() {
        QFETCH(int, keys);
        QFETCH(int, first);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ld = (first + keys + 7) / 8 * 8;  // the columns of a page rounded up to eight
        const int64_t ldo = keys + 2;                   // score rows with a gap after each
        const auto q = normal_vector(size_t(heads * dim), 3);
        const auto drawn = normal_vector(size_t(dim * ld), 4);
        std::vector<uint16_t> half(drawn.size());
        arbor::ref::f16_from_f32(drawn.data(), half.data(), int64_t(half.size()));
        std::vector<float> columns(half.size());  // values a half holds exactly
        for (size_t i = 0; i < half.size(); ++i) columns[i] = arbor::fp16_to_fp32(half[i]);
        auto key = [&](int64_t d, int64_t j) { return columns[size_t(d * ld + j)]; };
        auto scores_of = [&](auto kernel, const auto* k, int64_t n_q, const float* qh, int64_t stride, int64_t from,
                             int64_t n) {
            std::vector<float> out(size_t(n_q * ldo), -7.0f);
            kernel(qh, n_q, k, stride, from, n, dim, out.data(), ldo);
            return out;
        };

        const auto ref = scores_of(arbor::ref::dot_columns_f32, columns.data(), heads, q.data(), ld, first, keys);
        QCOMPARE(scores_of(arbor::ref::dot_columns_f16, half.data(), heads, q.data(), ld, first, keys), ref);
        for (int h = 0; h < heads; ++h) {
            for (int j = 0; j < keys; ++j) {
                double want = 0.0;
                for (int d = 0; d < dim; ++d) want += double(q[size_t(h * dim + d)]) * double(key(d, first + j));
                QVERIFY(close(ref[size_t(h * ldo + j)], want, dim));
            }
            for (int64_t j = keys; j < ldo; ++j) QCOMPARE(ref[size_t(h * ldo + j)], -7.0f);
        }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar kernels run here");

        const auto got = scores_of(arbor::avx2::dot_columns_f32, columns.data(), heads, q.data(), ld, first, keys);
        QCOMPARE(scores_of(arbor::avx2::dot_columns_f16, half.data(), heads, q.data(), ld, first, keys), got);
        for (int h = 0; h < heads; ++h) {
            for (int j = 0; j < keys; ++j) {
                float chain = 0.0f;
                for (int d = 0; d < dim; ++d) chain = std::fma(q[size_t(h * dim + d)], key(d, first + j), chain);
                QCOMPARE(std::bit_cast<uint32_t>(got[size_t(h * ldo + j)]), std::bit_cast<uint32_t>(chain));
                QVERIFY(close(got[size_t(h * ldo + j)], ref[size_t(h * ldo + j)], dim));
                // The same bits for this key alone, in any group of eight.
                const auto one = scores_of(arbor::avx2::dot_columns_f16, half.data(), 1, &q[size_t(h * dim)], ld,
                                           first + j, 1);
                QCOMPARE(std::bit_cast<uint32_t>(one[0]), std::bit_cast<uint32_t>(chain));
            }
            for (int64_t j = keys; j < ldo; ++j) QCOMPARE(got[size_t(h * ldo + j)], -7.0f);
            const auto alone = scores_of(arbor::avx2::dot_columns_f32, columns.data(), 1, &q[size_t(h * dim)], ld,
                                         first, keys);
            for (int j = 0; j < keys; ++j) QCOMPARE(alone[size_t(j)], got[size_t(h * ldo + j)]);
        }
        // A stride the AVX2 kernels cannot read in groups of eight: computed as the reference.
        if (ld > first + keys) {
            std::vector<float> narrow(size_t(dim * (first + keys)));
            for (int d = 0; d < dim; ++d)
                for (int j = 0; j < first + keys; ++j) narrow[size_t(d * (first + keys) + j)] = key(d, j);
            QCOMPARE(scores_of(arbor::avx2::dot_columns_f32, narrow.data(), heads, q.data(), first + keys, first, keys),
                     ref);
        }
    }

    // The value kernels of a KV group's query heads over a page: AVX2 against the
    // reference, and each head's result independent of the heads beside it.
    void attentionValueKernels_data() {
        QTest::addColumn<int>("rows");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int rows : {1, 5, 8, 9, 16, 23})
            for (int dim : {8, 64, 72, 128, 12})
                for (int heads : {1, 3, 4, 7})
                    QTest::newRow(qPrintable(QString("%1 values x %2 dims, %3 heads").arg(rows).arg(dim).arg(heads)))
                        << rows << dim << heads;
    }
    void attentionValueKernels() {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ld = rows + 2;  // weight rows with a gap after each
        const auto m = normal_vector(size_t(rows * dim), 4);
        const auto weights = normal_vector(size_t(heads * ld), 5);
        auto out_ref = normal_vector(size_t(heads * dim), 6);
        const auto out_start = out_ref;
        arbor::ref::accumulate_rows_f32(weights.data(), ld, heads, m.data(), rows, dim, out_ref.data());
        for (int h = 0; h < heads; ++h)
            for (int i = 0; i < dim; ++i) {
                double want = out_start[size_t(h * dim + i)];
                for (int j = 0; j < rows; ++j) want += double(weights[size_t(h * ld + j)]) * double(m[size_t(j * dim + i)]);
                QVERIFY(close(out_ref[size_t(h * dim + i)], want, rows));
            }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA: only the scalar kernels run here");

        auto out = out_start;
        arbor::avx2::accumulate_rows_f32(weights.data(), ld, heads, m.data(), rows, dim, out.data());
        for (int h = 0; h < heads; ++h) {
            for (int i = 0; i < dim; ++i) QVERIFY(close(out[size_t(h * dim + i)], out_ref[size_t(h * dim + i)], rows));
            std::vector<float> head_out(out_start.begin() + h * dim, out_start.begin() + (h + 1) * dim);
            arbor::avx2::accumulate_rows_f32(&weights[size_t(h * ld)], ld, 1, m.data(), rows, dim, head_out.data());
            for (int i = 0; i < dim; ++i)
                QCOMPARE(std::bit_cast<uint32_t>(head_out[size_t(i)]), std::bit_cast<uint32_t>(out[size_t(h * dim + i)]));
        }
    }

    // F16 value rows (the KV cache's default): the reference against the F32 reference on
    // the rows converted to float, and the AVX2 kernel bit for bit against the F32 kernel
    // on them (the same arithmetic after an exact conversion).
    void attentionValueKernelsOnHalfRows_data() { attentionValueKernels_data(); }
    void attentionValueKernelsOnHalfRows() {
        QFETCH(int, rows);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ld = rows + 2;
        const auto m = normal_vector(size_t(rows * dim), 14);
        const auto weights = normal_vector(size_t(heads * ld), 15);
        std::vector<uint16_t> half(m.size());
        arbor::ref::f16_from_f32(m.data(), half.data(), int64_t(m.size()));
        std::vector<float> widened(m.size());
        for (size_t i = 0; i < m.size(); ++i) widened[i] = arbor::fp16_to_fp32(half[i]);

        const auto out_start = normal_vector(size_t(heads * dim), 16);
        auto out_ref = out_start, out_ref_f32 = out_start;
        arbor::ref::accumulate_rows_f16(weights.data(), ld, heads, half.data(), rows, dim, out_ref.data());
        arbor::ref::accumulate_rows_f32(weights.data(), ld, heads, widened.data(), rows, dim, out_ref_f32.data());
        const QString ref_diff = first_difference(out_ref, out_ref_f32, 1e-6, 1e-6);
        QVERIFY2(ref_diff.isEmpty(), qPrintable(ref_diff));
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar kernels run here");

        auto out = out_start, out_f32 = out_start;
        arbor::avx2::accumulate_rows_f16(weights.data(), ld, heads, half.data(), rows, dim, out.data());
        arbor::avx2::accumulate_rows_f32(weights.data(), ld, heads, widened.data(), rows, dim, out_f32.data());
        for (size_t i = 0; i < out.size(); ++i) {
            QCOMPARE(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(out_f32[i]));
            QVERIFY(close(out[i], out_ref[i], rows));
        }
    }

    // The AVX-512 attention kernels bit for bit against AVX2's (which the tests above hold
    // to the contract) on F32 and F16 keys and values, every output column and element
    // compared, those outside the range too: strides that are and are not a multiple of
    // sixteen, ranges starting and ending inside a group, one to eleven heads.
    void avx512AttentionKernelsEqualAvx2_data() {
        QTest::addColumn<int>("keys");
        QTest::addColumn<int>("first");
        QTest::addColumn<int>("ld");
        QTest::addColumn<int>("dim");
        QTest::addColumn<int>("heads");
        for (int keys : {1, 7, 16, 17, 31, 40})
            for (int first : {0, 5, 16})
                for (int pad : {0, 8})
                    for (int dim : {16, 64, 72, 128})
                        for (int heads : {1, 4, 7, 8, 11}) {
                            const int ld = (first + keys + 15) / 16 * 16 + pad;
                            QTest::newRow(qPrintable(QString("%1 keys from %2, ld %3 x %4 dims, %5 heads")
                                                         .arg(keys).arg(first).arg(ld).arg(dim).arg(heads)))
                                << keys << first << ld << dim << heads;
                        }
    }
    void avx512AttentionKernelsEqualAvx2() {
        if (!arbor::avx512::available())
            QSKIP("this CPU has no AVX-512 (F, BW, DQ, VL, VNNI): its attention kernels cannot run here");
        QFETCH(int, keys);
        QFETCH(int, first);
        QFETCH(int, ld);
        QFETCH(int, dim);
        QFETCH(int, heads);
        const int64_t ldo = keys + 3;
        const auto q = normal_vector(size_t(heads * dim), 21);
        const auto columns = normal_vector(size_t(dim * ld), 22);
        std::vector<uint16_t> half(columns.size());
        arbor::ref::f16_from_f32(columns.data(), half.data(), int64_t(half.size()));
        auto scores = [&](auto kernel, const auto* k) {
            std::vector<float> out(size_t(heads * ldo), -7.0f);
            kernel(q.data(), heads, k, ld, first, keys, dim, out.data(), ldo);
            return out;
        };
        auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
            for (size_t i = 0; i < a.size(); ++i)
                if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]))
                    return QString("element %1: %2 vs %3").arg(i).arg(double(a[i]), 0, 'g', 9).arg(double(b[i]), 0, 'g', 9);
            return QString();
        };
        QString diff = same_bits(scores(arbor::avx512::dot_columns_f32, columns.data()),
                                 scores(arbor::avx2::dot_columns_f32, columns.data()));
        QVERIFY2(diff.isEmpty(), qPrintable("F32 scores " + diff));
        diff = same_bits(scores(arbor::avx512::dot_columns_f16, half.data()),
                         scores(arbor::avx2::dot_columns_f16, half.data()));
        QVERIFY2(diff.isEmpty(), qPrintable("F16 scores " + diff));

        // Values: `keys` rows of dim elements, weights in rows of ldo.
        const auto weights = normal_vector(size_t(heads * ldo), 23);
        const auto start = normal_vector(size_t(heads * dim), 24);
        auto values = [&](auto kernel, const auto* rows) {
            auto out = start;
            kernel(weights.data(), ldo, heads, rows, keys, dim, out.data());
            return out;
        };
        diff = same_bits(values(arbor::avx512::accumulate_rows_f32, columns.data()),
                         values(arbor::avx2::accumulate_rows_f32, columns.data()));
        QVERIFY2(diff.isEmpty(), qPrintable("F32 values " + diff));
        diff = same_bits(values(arbor::avx512::accumulate_rows_f16, half.data()),
                         values(arbor::avx2::accumulate_rows_f16, half.data()));
        QVERIFY2(diff.isEmpty(), qPrintable("F16 values " + diff));
    }

    // Float to IEEE half, round to nearest even: the reference against a decision made
    // from the two neighbouring halves, and AVX2 (F16C) bit for bit against it, over
    // random values of every magnitude, ties, subnormals, overflow, infinities and NaN.
    void halfConversion() {
        std::vector<float> x = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, 1e6f, -1e6f,
                                6.1e-5f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-9f, -3.1e-6f,
                                std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f};
        std::mt19937 rng(21);
        std::uniform_int_distribution<uint32_t> bits;
        for (int i = 0; i < 20000; ++i) {
            const float f = std::bit_cast<float>(bits(rng));
            if (!std::isnan(f)) x.push_back(f);
        }
        std::vector<uint16_t> want(x.size());
        arbor::ref::f16_from_f32(x.data(), want.data(), int64_t(x.size()));
        for (size_t i = 0; i < x.size(); ++i) {
            const float got = arbor::fp16_to_fp32(want[i]);
            if (std::fabs(x[i]) >= 65520.0f) {
                QVERIFY2(std::isinf(got) && std::signbit(got) == std::signbit(x[i]), qPrintable(QString::number(x[i])));
                continue;
            }
            // No other half lies closer to x (the neighbour one step away on either side).
            const uint16_t h = want[i];
            for (int step : {-1, 1}) {
                const uint16_t other = uint16_t((h & 0x7fff) == 0 ? (step < 0 ? (h ^ 0x8000) + 1 : h + 1) : h + step);
                const float o = arbor::fp16_to_fp32(other);
                if (std::isinf(o) || std::isnan(o)) continue;
                const double d_got = std::fabs(double(got) - double(x[i])), d_other = std::fabs(double(o) - double(x[i]));
                QVERIFY2(d_got < d_other || (d_got == d_other && (h & 1) == 0),
                         qPrintable(QString("%1 -> %2").arg(double(x[i]), 0, 'g', 9).arg(double(got), 0, 'g', 9)));
            }
        }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar conversion runs here");
        std::vector<uint16_t> got(x.size());
        arbor::avx2::f16_from_f32(x.data(), got.data(), int64_t(x.size()));
        for (size_t i = 0; i < x.size(); ++i) QCOMPARE(got[i], want[i]);
    }

    // Half to float for every one of the 65536 halves: the reference gives known values
    // and round-trips through f16_from_f32 exactly; AVX2 (F16C) matches it bit for bit
    // (NaN for NaN: F16C quiets signalling ones).
    void halfToFloatConversion() {
        std::vector<uint16_t> all(65536);
        for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
        std::vector<float> want(all.size());
        arbor::ref::f32_from_f16(all.data(), want.data(), int64_t(all.size()));
        QCOMPARE(want[0x3c00], 1.0f);
        QCOMPARE(want[0xc100], -2.5f);
        QCOMPARE(want[0x7bff], 65504.0f);
        QCOMPARE(want[0x0001], std::ldexp(1.0f, -24));
        QVERIFY(std::isinf(want[0x7c00]) && std::isnan(want[0x7e00]) && std::signbit(want[0x8000]));
        std::vector<uint16_t> back(all.size());
        arbor::ref::f16_from_f32(want.data(), back.data(), int64_t(all.size()));
        for (size_t i = 0; i < all.size(); ++i)
            if (!std::isnan(want[i])) QCOMPARE(back[i], all[i]);
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the scalar conversion runs here");
        std::vector<float> got(all.size());
        arbor::avx2::f32_from_f16(all.data() + 3, got.data() + 3, int64_t(all.size()) - 3);  // a tail too
        arbor::avx2::f32_from_f16(all.data(), got.data(), 3);
        for (size_t i = 0; i < all.size(); ++i) {
            if (std::isnan(want[i])) QVERIFY(std::isnan(got[i]));
            else QCOMPARE(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]));
        }
    }
};

QTEST_APPLESS_MAIN(TestFloatKernels)
#include "test_float_kernels.moc"
