// Weights packed as panels of eight rows (panel_weights.h; Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL,
// MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): packing keeps every weight
// (checked against dequantize_row of the GGUF rows); the activations' 16-bit (and, for
// int8 activations, 8-bit) codes round each value to the nearest step (AVX2 bit for bit as the reference); the scalar
// reference follows the contract (checked against a fold written here over the GGUF
// blocks) and stays within the rounding's bound of the exact product; the tiles of each
// SIMD set (AVX2, AVX-VNNI, AVX-512 VNNI; a set this CPU lacks is skipped with its name)
// match the reference bit for bit for every tile shape and panel range and write only
// their own rows; and through matmul a row's result does not depend on its batch or on
// the number of threads.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/huge_pages.h"
#include "arbor/kernels/matmul.h"
#include "arbor/kernels/panel_weights.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"

#include "quant_test_util.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using arbor::DType;

constexpr DType kPanelTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                                 DType::IQ4_NL, DType::MXFP4, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                 DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

// The panel products of each SIMD set.
using PanelDot = void (*)(const arbor::PanelWeights&, int64_t, int64_t, const arbor::PanelActivations&, int64_t,
                          int64_t, float*, int64_t);
struct SimdSet {
    arbor::Isa isa;
    PanelDot dot;
};
constexpr SimdSet kSimdSets[] = {{arbor::Isa::Avx2, arbor::avx2::panel_dot},
                                 {arbor::Isa::AvxVnni, arbor::avx_vnni::panel_dot},
                                 {arbor::Isa::Avx512, arbor::avx512::panel_dot}};

// IQ4_NL's (and IQ4_XS's) non-linear grid, as ggml-common.h's kvalues_iq4nl.
constexpr int kIq4Grid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// MXFP4's E2M1 values doubled, as ggml-common.h's kvalues_mxfp4 (its scale halved to match).
constexpr int kMxfp4Grid[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

struct Matrix {
    DType type;
    int64_t rows, cols;
    std::vector<uint8_t> bytes;
    arbor::TensorView view() const { return {type, cols, rows, bytes.data(), arbor::row_bytes(type, cols)}; }
};

// MXFP4 exponents (byte 0 of each 17-byte block) are kept to scales 2^-9 .. 2^8, as a
// model's: products of the full range overflow to infinities.
Matrix random_matrix(DType type, int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    Matrix m{type, rows, cols, {}};
    for (int64_t r = 0; r < rows; ++r) {
        const auto row = arbor::test::random_weight_row(type, cols, rng);
        m.bytes.insert(m.bytes.end(), row.begin(), row.end());
    }
    if (type == DType::MXFP4)
        for (size_t b = 0; b < m.bytes.size(); b += 17) m.bytes[b] = uint8_t(119 + rng() % 18);
    return m;
}

std::vector<float> random_rows(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> x;
    for (int64_t t = 0; t < rows; ++t) {
        const auto row = arbor::test::random_activations(cols, rng);
        x.insert(x.end(), row.begin(), row.end());
    }
    return x;
}

// The contract's activation rounding, written out: codes and d, s and the halves' h of one block.
struct BlockScale {
    float d, s, h[2];
};
BlockScale round_block(const float* x, int16_t* c, int32_t limit) {
    float a = 0.0f;
    for (int k = 0; k < 32; ++k) a = std::max(a, std::fabs(x[k]));
    const float d = a / float(limit), inv = d > 0.0f ? 1.0f / d : 0.0f;
    int sum[2] = {};
    for (int k = 0; k < 32; ++k) sum[k / 16] += c[k] = int16_t(std::nearbyint(x[k] * inv));
    return {d, d * float(sum[0] + sum[1]), {d * float(sum[0]), d * float(sum[1])}};
}

// Code, scale and min of element k of a GGUF block.
struct Element {
    int code;
    float d, m;
};
// Q4_K and Q5_K: the low four bits of element k's code, its sub-block's scale and min.
template <class Block>
Element k_quant_element(const Block& b, int64_t k) {
    // GGUF's layout written out: sub-block j's element l in nibble j % 2 of byte
    // 32 (j / 2) + l; 6-bit scale and min of sub-block j from the 12 packed bytes.
    const int j = int(k % 256) / 32, l = int(k % 32);
    const uint8_t byte = b.qs[32 * (j / 2) + l];
    const uint8_t* s = b.scales;
    const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4);
    const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    return {j % 2 ? byte >> 4 : byte & 0x0f, arbor::fp16_to_fp32(b.d) * float(sc),
            -(arbor::fp16_to_fp32(b.dmin) * float(mn))};
}

Element gguf_element(DType type, const uint8_t* row, int64_t k) {
    if (type == DType::Q4_0) {
        // The value d * (code - 8) as the contract sees it: code, d and the minimum -8 d.
        const auto& b = reinterpret_cast<const arbor::BlockQ4_0*>(row)[k / 32];
        const int i = int(k % 32);
        const float d = arbor::fp16_to_fp32(b.d);
        return {i < 16 ? b.qs[i] & 0x0f : b.qs[i - 16] >> 4, d, -8.0f * d};
    }
    if (type == DType::Q4_1) {
        const auto& b = reinterpret_cast<const arbor::BlockQ4_1*>(row)[k / 32];
        const int i = int(k % 32);
        return {i < 16 ? b.qs[i] & 0x0f : b.qs[i - 16] >> 4, arbor::fp16_to_fp32(b.d), arbor::fp16_to_fp32(b.m)};
    }
    if (type == DType::Q5_0 || type == DType::Q5_1) {
        // Element i < 16 in the low nibble of qs[i], i + 16 in its high nibble; the fifth
        // bit of element i is bit i of the little-endian qh. Q5_0's value is d * (code - 16).
        const uint8_t* b = row + size_t(k / 32) * (type == DType::Q5_0 ? 22 : 24);
        const int i = int(k % 32), qs = type == DType::Q5_0 ? 6 : 8;
        const uint32_t qh = uint32_t(b[qs - 4]) | uint32_t(b[qs - 3]) << 8 | uint32_t(b[qs - 2]) << 16 | uint32_t(b[qs - 1]) << 24;
        const int code = (i < 16 ? b[qs + i] & 0x0f : b[qs + i - 16] >> 4) | int((qh >> i) & 1) << 4;
        uint16_t d, m;
        std::memcpy(&d, b, 2);
        std::memcpy(&m, b + 2, 2);
        if (type == DType::Q5_0) return {code - 16, arbor::fp16_to_fp32(d), 0.0f};
        return {code, arbor::fp16_to_fp32(d), arbor::fp16_to_fp32(m)};
    }
    if (type == DType::IQ4_NL) {
        // As Q4_0's nibbles, each an index into the grid.
        const auto& b = reinterpret_cast<const arbor::BlockIQ4_NL*>(row)[k / 32];
        const int i = int(k % 32);
        return {kIq4Grid[i < 16 ? b.qs[i] & 0x0f : b.qs[i - 16] >> 4], arbor::fp16_to_fp32(b.d), 0.0f};
    }
    if (type == DType::IQ4_XS) {
        // Sub-block j: IQ4_NL's nibbles in qs[16j ..], scale d * (s - 32) with the low four
        // bits of s in nibble j % 2 of scales_l[j / 2] and the high two at bit 2j of scales_h.
        const auto& b = reinterpret_cast<const arbor::BlockIQ4_XS*>(row)[k / 256];
        const int j = int(k % 256) / 32, i = int(k % 32);
        const uint8_t* q = b.qs + 16 * j;
        const int s = ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((b.scales_h >> (2 * j)) & 3) << 4);
        return {kIq4Grid[i < 16 ? q[i] & 0x0f : q[i - 16] >> 4], arbor::fp16_to_fp32(b.d) * float(s - 32), 0.0f};
    }
    if (type == DType::MXFP4) {
        // Byte 0 the exponent e, bytes 1-16 IQ4_NL's nibbles indexing the doubled E2M1
        // values; the scale is half of 2^(e - 127).
        const uint8_t* b = row + size_t(k / 32) * 17;
        const int i = int(k % 32);
        return {kMxfp4Grid[i < 16 ? b[1 + i] & 0x0f : b[1 + i - 16] >> 4], std::ldexp(1.0f, int(b[0]) - 128), 0.0f};
    }
    if (type == DType::Q2_K) {
        // Element e = 128h + 32u + l (u < 4, l < 32): two bits at bit 2u of qs[32h + l];
        // sub-block i = e / 16's byte scales[i], its scale in the low nibble, its min in the
        // high; the value is d * sc * code - dmin * m.
        const auto& b = reinterpret_cast<const arbor::BlockQ2_K*>(row)[k / 256];
        const int e = int(k % 256), h = e / 128, u = e % 128 / 32, l = e % 32, i = e / 16;
        return {(b.qs[32 * h + l] >> (2 * u)) & 3, arbor::fp16_to_fp32(b.d) * float(b.scales[i] & 0x0f),
                -(arbor::fp16_to_fp32(b.dmin) * float(b.scales[i] >> 4))};
    }
    if (type == DType::Q3_K) {
        // Element e = 128h + 32u + l (u < 4, l < 32): two bits at bit 2u of qs[32h + l], the
        // third at bit 4h + u of hmask[l] (clear: four less); the value is
        // d * (s - 32) * code with sub-block i = e / 16's 6-bit s: its low four bits in
        // nibble i / 8 of scales[i % 8], its high two at bit 2 (i / 4) of scales[8 + i % 4].
        const auto& b = reinterpret_cast<const arbor::BlockQ3_K*>(row)[k / 256];
        const int e = int(k % 256), h = e / 128, u = e % 128 / 32, l = e % 32, i = e / 16;
        const int low = (b.qs[32 * h + l] >> (2 * u)) & 3, third = (b.hmask[l] >> (4 * h + u)) & 1;
        const int s = ((b.scales[i % 8] >> (4 * (i / 8))) & 0x0f) | (((b.scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
        return {low - (third ? 0 : 4), arbor::fp16_to_fp32(b.d) * float(s - 32), 0.0f};
    }
    if (type == DType::Q4_K) {
        return k_quant_element(reinterpret_cast<const arbor::BlockQ4_K*>(row)[k / 256], k);
    }
    if (type == DType::Q5_K) {
        // As Q4_K, and the fifth bit of sub-block j's element l is bit j of qh[l].
        const auto& b = reinterpret_cast<const arbor::BlockQ5_K*>(row)[k / 256];
        Element e = k_quant_element(b, k);
        e.code |= ((b.qh[k % 32] >> (k % 256 / 32)) & 1) << 4;
        return e;
    }
    if (type == DType::Q6_K) {
        // GGUF's layout written out: element 128h + 32u + l (u < 4, l < 32) has its low
        // four bits in nibble u / 2 of ql[64h + 32 (u % 2) + l], its high two at bit 2u of
        // qh[32h + l]; the value is d * scales[e / 16] * (code - 32).
        const auto& b = reinterpret_cast<const arbor::BlockQ6_K*>(row)[k / 256];
        const int e = int(k % 256), h = e / 128, u = e % 128 / 32, l = e % 32;
        const int lo = (b.ql[64 * h + 32 * (u % 2) + l] >> (4 * (u / 2))) & 0x0f;
        const int hi = (b.qh[32 * h + l] >> (2 * u)) & 3;
        return {(lo | (hi << 4)) - 32, arbor::fp16_to_fp32(b.d) * float(b.scales[e / 16]), 0.0f};
    }
    const auto& b = reinterpret_cast<const arbor::BlockQ8_0*>(row)[k / 32];
    return {b.qs[k % 32], arbor::fp16_to_fp32(b.d), 0.0f};
}

bool has_min(DType type) {
    return type == DType::Q4_0 || type == DType::Q4_1 || type == DType::Q5_1 || type == DType::Q4_K || type == DType::Q5_K;
}

bool halves_have_scales(DType type) {
    return type == DType::Q6_K || type == DType::Q3_K || type == DType::Q2_K;
}

// The contract written out over the GGUF blocks: integer sums of codes per block (Q2_K,
// Q3_K, Q6_K: per half block, each with its own scale, and Q2_K's own min), folded into
// one float accumulator in column order.
std::vector<float> contract_products(const Matrix& w, const std::vector<float>& x, int64_t n_x,
                                     int32_t limit = arbor::kPanelCodeLimit16) {
    std::vector<float> y(size_t(n_x * w.rows));
    std::vector<int16_t> c(size_t(w.cols));
    for (int64_t t = 0; t < n_x; ++t) {
        std::vector<BlockScale> scale;
        for (int64_t b = 0; b < w.cols / 32; ++b)
            scale.push_back(round_block(x.data() + t * w.cols + b * 32, c.data() + b * 32, limit));
        for (int64_t r = 0; r < w.rows; ++r) {
            float acc = 0.0f;
            const int64_t part = halves_have_scales(w.type) ? 16 : 32;
            for (int64_t b = 0; b < w.cols / 32; ++b) {
                Element e{};
                for (int64_t p = b * 32; p < b * 32 + 32; p += part) {
                    int n = 0;
                    for (int64_t k = p; k < p + part; ++k) {
                        e = gguf_element(w.type, w.view().row(r), k);
                        n += e.code * c[size_t(k)];
                    }
                    acc = std::fma(float(n), e.d * scale[size_t(b)].d, acc);
                    if (w.type == DType::Q2_K) acc = std::fma(e.m, scale[size_t(b)].h[(p - b * 32) / 16], acc);
                }
                if (has_min(w.type)) acc = std::fma(e.m, scale[size_t(b)].s, acc);
            }
            y[size_t(t * w.rows + r)] = acc;
        }
    }
    return y;
}

arbor::PanelActivations quantized(const std::vector<float>& x, int64_t n_x, int64_t cols,
                                  int32_t limit = arbor::kPanelCodeLimit16) {
    arbor::PanelActivations a;
    a.resize(n_x, cols, limit);
    for (int64_t t = 0; t < n_x; ++t) a.quantize_row(t, x.data() + t * cols);
    return a;
}

QString first_bit_difference(const std::vector<float>& got, const std::vector<float>& want) {
    for (size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
            return QString("element %1: %2 vs %3").arg(i).arg(double(got[i]), 0, 'g', 9).arg(double(want[i]), 0, 'g', 9);
    return {};
}

QString type_name(DType type) {
    const std::string_view name = arbor::dtype_name(type);
    return QString::fromUtf8(name.data(), qsizetype(name.size()));
}

bool super_blocks(DType type) {
    return type == DType::Q2_K || type == DType::Q3_K || type == DType::Q4_K || type == DType::Q5_K || type == DType::Q6_K ||
           type == DType::IQ4_XS;
}

void add_shape_rows() {
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("cols");
    for (DType type : kPanelTypes)
        for (int rows : {1, 7, 8, 9, 24, 61})
            for (int cols : super_blocks(type) ? std::vector<int>{256, 768} : std::vector<int>{32, 96, 576})
                QTest::newRow(qPrintable(QString("%1 %2x%3").arg(type_name(type)).arg(rows).arg(cols)))
                    << int(type) << rows << cols;
}

} // namespace

class TestPanelWeights : public QObject {
    Q_OBJECT

private slots:
    void packingKeepsEveryWeight_data() { add_shape_rows(); }
    void packingKeepsEveryWeight() {
        QFETCH(int, type);
        QFETCH(int, rows);
        QFETCH(int, cols);
        Matrix w = random_matrix(DType(type), rows, cols, 11);
        // Every MXFP4 exponent, the subnormal and infinite scales' included.
        if (DType(type) == DType::MXFP4)
            for (size_t b = 0; b < w.bytes.size(); b += 17) w.bytes[b] = uint8_t(b / 17 * 7);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        QCOMPARE(p.panels(), int64_t((rows + 7) / 8));
        QCOMPARE(p.rows(), int64_t(rows));
        // The same bytes as the GGUF blocks, padding rows included (Q4_0: as Q4_1's, the
        // minimum added; Q4_K: 1184 bytes per super-block of eight rows for 8 x 144, the
        // scales and mins unpacked to bytes; Q5_K: 1440 for 8 x 176, the same; IQ4_XS:
        // 1104 for 8 x 136, the scales unpacked to bytes; Q3_K: 1168 for 8 x 110, a nibble
        // per code; Q2_K and MXFP4 as their GGUF blocks).
        const DType layout = DType(type) == DType::Q4_0 ? DType::Q4_1 : DType(type);
        const size_t per_panel = DType(type) == DType::Q4_K     ? size_t(cols / 256) * 1184
                                 : DType(type) == DType::Q5_K   ? size_t(cols / 256) * 1440
                                 : DType(type) == DType::IQ4_XS ? size_t(cols / 256) * 1104
                                 : DType(type) == DType::Q3_K   ? size_t(cols / 256) * 1168
                                                                : arbor::row_bytes(layout, cols) * 8;
        QCOMPARE(p.panel_bytes() * size_t(p.panels()), per_panel * size_t(p.panels()));
        std::vector<float> want(static_cast<size_t>(cols)), got(static_cast<size_t>(cols));
        for (int r = 0; r < rows; ++r) {
            arbor::dequantize_row(DType(type), w.view().row(r), want.data(), cols, arbor::Isa::Scalar);
            p.dequantize_row(r, got.data());
            if (DType(type) == DType::Q4_0) {
                // d * 8 - 8 d is +0 where d * (8 - 8) is -0 for a negative d: equal values,
                // the sign of a zero aside.
                for (int k = 0; k < cols; ++k)
                    if (want[size_t(k)] == 0.0f && got[size_t(k)] == 0.0f) want[size_t(k)] = got[size_t(k)];
            }
            const QString diff = first_bit_difference(got, want);
            QVERIFY2(diff.isEmpty(), qPrintable(QString("row %1, %2").arg(r).arg(diff)));
        }
    }

    // Several matrices packed into one buffer of huge pages (as the backend packs a
    // model's): disjoint, cache-line aligned slices of a 2 MiB aligned buffer, each
    // panel the same bytes as packed alone; a matrix that cannot be packed gets no slice.
    void sharedStorageHoldsTheSamePanels() {
        const Matrix a = random_matrix(DType::Q4_1, 37, 96, 21), b = random_matrix(DType::Q8_0, 16, 64, 22),
                     c = random_matrix(DType::Q4_0, 9, 32, 23), k = random_matrix(DType::Q4_K, 11, 512, 24),
                     k6 = random_matrix(DType::Q6_K, 17, 256, 25), k5 = random_matrix(DType::Q5_K, 13, 512, 26),
                     xs = random_matrix(DType::IQ4_XS, 10, 256, 27), q5 = random_matrix(DType::Q5_0, 9, 96, 28);
        const Matrix f32{DType::F32, 4, 32, std::vector<uint8_t>(4 * 32 * sizeof(float))};
        const arbor::TensorView va = a.view(), vb = b.view(), vc = c.view(), vk = k.view(), vk6 = k6.view(),
                                vk5 = k5.view(), vxs = xs.view(), vq5 = q5.view(), vf = f32.view();
        const std::vector<const arbor::TensorView*> ws = {&va, &vf, &vb, &vc, &vk, &vk6, &vk5, &vxs, &vq5};
        std::vector<size_t> offsets;
        const auto storage = arbor::PanelWeights::storage_for(ws, offsets);
        QCOMPARE(reinterpret_cast<uintptr_t>(storage.get()) % arbor::kHugePage, uintptr_t(0));
        QCOMPARE(offsets[1], SIZE_MAX);
        size_t end = 0;
        for (size_t i : {0, 2, 3, 4, 5, 6, 7, 8}) {
            QCOMPARE(offsets[i] % 64, size_t(0));
            QVERIFY(offsets[i] >= end);  // in order and disjoint
            end = offsets[i] + arbor::PanelWeights::packed_bytes(*ws[i]);
            const auto shared = arbor::PanelWeights::pack(*ws[i], storage, offsets[i]);
            const auto alone = arbor::PanelWeights::pack(*ws[i]);
            QCOMPARE(shared.panel(0), storage.get() + offsets[i]);
            QCOMPARE(shared.panel_bytes() * size_t(shared.panels()), arbor::PanelWeights::packed_bytes(*ws[i]));
            QVERIFY(std::memcmp(shared.panel(0), alone.panel(0), arbor::PanelWeights::packed_bytes(*ws[i])) == 0);
        }
        QCOMPARE(arbor::PanelWeights::packed_bytes(vf), size_t(0));
    }

    void referenceFollowsTheContract_data() { add_shape_rows(); }
    void referenceFollowsTheContract() {
        QFETCH(int, type);
        QFETCH(int, rows);
        QFETCH(int, cols);
        const Matrix w = random_matrix(DType(type), rows, cols, 12);
        const int64_t n_x = 3;
        const auto x = random_rows(n_x, cols, 13);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        std::vector<float> y(size_t(n_x * rows));
        arbor::ref::panel_dot(p, 0, p.panels(), quantized(x, n_x, cols), 0, n_x, y.data(), rows);
        const QString diff = first_bit_difference(y, contract_products(w, x, n_x));
        QVERIFY2(diff.isEmpty(), qPrintable(diff));
        // And the contract is a dot product: the exact one up to the activations' rounding
        // (half a step of each block, times the weight) and float rounding.
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = 0; r < rows; ++r) {
            arbor::dequantize_row(DType(type), w.view().row(r), row.data(), cols, arbor::Isa::Scalar);
            for (int64_t t = 0; t < n_x; ++t) {
                double exact = 0, bound = 1e-6;
                for (int64_t b = 0; b < cols / 32; ++b) {
                    double step = 0;
                    for (int64_t k = b * 32; k < b * 32 + 32; ++k) step = std::max(step, std::fabs(double(x[size_t(t * cols + k)])));
                    step /= 32767;
                    for (int64_t k = b * 32; k < b * 32 + 32; ++k) {
                        const double wx = double(row[size_t(k)]) * x[size_t(t * cols + k)];
                        exact += wx;
                        bound += std::fabs(double(row[size_t(k)])) * step * 0.505 + 1e-6 * std::fabs(wx);
                    }
                }
                const double got = y[size_t(t * rows + r)];
                QVERIFY2(std::fabs(got - exact) <= bound,
                         qPrintable(QString("row %1, activation %2: %3 vs exact %4, bound %5").arg(r).arg(t).arg(got).arg(exact).arg(bound)));
            }
        }
    }

    // Codes are the nearest steps of d = max / L (L = 32767 or 127; ties to even, up to the
    // rounding of the reciprocal), the largest magnitude becomes +-L, s and h are d times
    // the codes' sums and the integer half sums are those sums; AVX2 gives the same bits.
    void activationRounding() {
        for (const int32_t limit : {arbor::kPanelCodeLimit16, arbor::kPanelCodeLimit8}) {
            std::mt19937 rng(51);
            std::vector<std::vector<float>> blocks;
            for (int i = 0; i < 400; ++i) {
                const float scale = std::ldexp(1.0f, int(rng() % 40) - 20);
                std::vector<float> b = arbor::test::random_activations(32, rng);
                for (float& v : b) v *= scale;
                blocks.push_back(b);
            }
            blocks.push_back(std::vector<float>(32, 0.0f));
            // Ties: with a largest magnitude of L, the step is 1 and halves are exact ties.
            std::vector<float> ties(32);
            for (int k = 0; k < 32; ++k) ties[size_t(k)] = float(k) - 15.5f;
            ties[0] = -float(limit);
            blocks.push_back(ties);
            for (const auto& b : blocks) {
                int16_t ref_codes[32], avx_codes[32];
                const arbor::PanelBlockScale r = arbor::ref::quantize_panel_block(b.data(), ref_codes, limit);
                double max_abs = 0, sum = 0;
                for (float v : b) max_abs = std::max(max_abs, double(std::fabs(v)));
                for (int k = 0; k < 32; ++k) {
                    const double v = b[size_t(k)], step = double(r.d);
                    // Half a step, plus the rounding of 1 / d and of x * (1 / d): under
                    // L * 2^-23 steps.
                    QVERIFY2(std::fabs(ref_codes[k] * step - v) <= 0.505 * step,
                             qPrintable(QString("element %1 = %2: code %3, step %4").arg(k).arg(v).arg(ref_codes[k]).arg(step)));
                    QVERIFY(std::abs(int(ref_codes[k])) <= limit);
                    if (std::fabs(v) == max_abs && max_abs > 0) QCOMPARE(std::abs(int(ref_codes[k])), limit);
                    sum += ref_codes[k];
                }
                QCOMPARE(r.s, r.d * float(sum));
                for (int i = 0; i < 2; ++i) {
                    int half = 0;
                    for (int k = 16 * i; k < 16 * i + 16; ++k) half += ref_codes[k];
                    QCOMPARE(r.h[i], r.d * float(half));
                    QCOMPARE(r.code_h[i], half);
                }
                if (&b == &blocks.back())
                    for (int k = 1; k < 32; ++k) {
                        const int want = int(std::nearbyint(b[size_t(k)]));  // the even neighbour
                        QVERIFY2(ref_codes[k] == want && want % 2 == 0,
                                 qPrintable(QString("tie %1: code %2").arg(b[size_t(k)]).arg(ref_codes[k])));
                    }
                if (!arbor::avx2::available()) continue;
                const arbor::PanelBlockScale v = arbor::avx2::quantize_panel_block(b.data(), avx_codes, limit);
                QVERIFY(std::memcmp(ref_codes, avx_codes, sizeof ref_codes) == 0);
                QCOMPARE(std::memcmp(&v.d, &r.d, sizeof(float)), 0);
                QCOMPARE(std::memcmp(&v.s, &r.s, sizeof(float)), 0);
                QCOMPARE(std::memcmp(v.h, r.h, sizeof r.h), 0);
                QCOMPARE(std::memcmp(v.code_h, r.code_h, sizeof r.code_h), 0);
            }
        }
        // The byte copy of 8-bit codes and the integer half sums a PanelActivations row keeps.
        std::mt19937 rng(52);
        const std::vector<float> row = arbor::test::random_activations(96, rng);
        arbor::PanelActivations a;
        a.resize(1, 96, arbor::kPanelCodeLimit8);
        a.quantize_row(0, row.data());
        for (int k = 0; k < 96; ++k) QCOMPARE(int(a.codes8(0)[k]), int(a.codes(0)[k]));
        for (int h = 0; h < 6; ++h) {
            int sum = 0;
            for (int k = 16 * h; k < 16 * h + 16; ++k) sum += a.codes(0)[k];
            QCOMPARE(a.code_half_sums(0)[h], sum);
        }
        if (!arbor::avx2::available()) QSKIP("this CPU has no AVX2/FMA/F16C: only the reference rounding was checked");
    }

    // Every activation-row count up to two tiles of eight and past, every panel range
    // shape (whole matrix, inner, ending on the partial last panel); rows outside the
    // range stay untouched.
    // With 16-bit codes and with 8-bit ones (int8 activations: AVX-512's byte products for
    // the nibble layouts and Q6_K, the 16-bit tiles for the rest).
    void simdMatchesReference_data() {
        QTest::addColumn<int>("set");
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n_x");
        QTest::addColumn<int>("limit");
        for (int limit : {arbor::kPanelCodeLimit16, arbor::kPanelCodeLimit8})
            for (int set = 0; set < int(std::size(kSimdSets)); ++set)
                for (DType type : kPanelTypes)
                    for (int n_x : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 16, 17, 24})
                        QTest::newRow(qPrintable(QString("%1 %2 x%3 %4-bit")
                                                     .arg(arbor::isa_name(kSimdSets[set].isa).data())
                                                     .arg(type_name(type))
                                                     .arg(n_x)
                                                     .arg(limit == arbor::kPanelCodeLimit8 ? 8 : 16)))
                            << set << int(type) << n_x << limit;
    }
    void simdMatchesReference() {
        QFETCH(int, set);
        QFETCH(int, type);
        QFETCH(int, n_x);
        QFETCH(int, limit);
        const SimdSet simd = kSimdSets[set];
        if (!arbor::isa_supported(simd.isa))
            QSKIP(qPrintable(QString("this CPU has no %1 (or ARBOR_CPU_ISA hides it): its panel kernel cannot run here")
                                 .arg(arbor::isa_name(simd.isa).data())));
        // Ten panels, the last with five rows; K-quants: two super-blocks.
        const int64_t rows = 77, cols = super_blocks(DType(type)) ? 512 : 160;
        const Matrix w = random_matrix(DType(type), rows, cols, 21);
        // One activation row more than used: the products start at row 1 of the activations.
        const auto x = random_rows(n_x + 1, cols, 22);
        const arbor::PanelActivations a = quantized(x, n_x + 1, cols, limit);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        const float untouched = std::numeric_limits<float>::quiet_NaN();
        for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 10}, {1, 8}, {3, 10}, {9, 10}, {4, 5}}) {
            // Eight guard elements past the end catch a store of the last panel's missing rows.
            std::vector<float> want(size_t(n_x * rows + 8), untouched), got = want;
            arbor::ref::panel_dot(p, begin, end, a, 1, n_x, want.data(), rows);
            simd.dot(p, begin, end, a, 1, n_x, got.data(), rows);
            const QString diff = first_bit_difference(got, want);
            QVERIFY2(diff.isEmpty(), qPrintable(QString("panels %1-%2, %3").arg(begin).arg(end).arg(diff)));
            for (int64_t t = 0; t < n_x; ++t)
                for (int64_t r = 0; r < rows; ++r) {
                    const bool inside = r >= begin * 8 && r < end * 8;
                    QVERIFY2(std::isnan(got[size_t(t * rows + r)]) != inside,
                             qPrintable(QString("panels %1-%2: row %3 of activation %4").arg(begin).arg(end).arg(r).arg(t)));
                }
            for (size_t g = size_t(n_x * rows); g < got.size(); ++g) QVERIFY2(std::isnan(got[g]), "guard overwritten");
        }
    }

    // MXFP4's scales across the exponent range (0 and 1 give subnormal scales; up to 230, so
    // that no product overflows), and every fourth row with only exponents 0, 1 and 2 (its
    // products alone show a tiny scale's bits): each SIMD set's scales are GGUF's e8m0 values too.
    void simdMatchesReferenceOnEveryMxfp4Scale_data() {
        QTest::addColumn<int>("set");
        for (int set = 0; set < int(std::size(kSimdSets)); ++set)
            QTest::newRow(arbor::isa_name(kSimdSets[set].isa).data()) << set;
    }
    void simdMatchesReferenceOnEveryMxfp4Scale() {
        QFETCH(int, set);
        const SimdSet simd = kSimdSets[set];
        if (!arbor::isa_supported(simd.isa))
            QSKIP(qPrintable(QString("this CPU has no %1 (or ARBOR_CPU_ISA hides it): its panel kernel cannot run here")
                                 .arg(arbor::isa_name(simd.isa).data())));
        const int64_t rows = 40, cols = 32 * 48, n_x = 5;
        Matrix w = random_matrix(DType::MXFP4, rows, cols, 61);
        for (size_t b = 0; b < w.bytes.size(); b += 17) {
            const size_t block = b / 17, row = block / (cols / 32);
            w.bytes[b] = uint8_t(row % 4 == 0 ? block % 3 : block * 13 % 231);
        }
        const auto x = random_rows(n_x, cols, 62);
        const arbor::PanelActivations a = quantized(x, n_x, cols);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        std::vector<float> want(size_t(n_x * rows)), got(size_t(n_x * rows));
        arbor::ref::panel_dot(p, 0, p.panels(), a, 0, n_x, want.data(), rows);
        simd.dot(p, 0, p.panels(), a, 0, n_x, got.data(), rows);
        for (float v : want) QVERIFY(std::isfinite(v) && v != 0.0f);
        QVERIFY2(first_bit_difference(got, want).isEmpty(), qPrintable(first_bit_difference(got, want)));
    }

    // Through matmul (threads, tasks, 64-row passes): each row of a batch equals the row
    // alone, with one thread or three, and equals the contract.
    // Float mode (16-bit codes) and Int8 mode (8-bit codes).
    void rowIndependentOfBatchAndThreads_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<bool>("int8");
        for (bool int8 : {false, true})
            for (DType type : kPanelTypes)
                QTest::newRow(qPrintable(type_name(type) + (int8 ? " int8" : ""))) << int(type) << int8;
    }
    void rowIndependentOfBatchAndThreads() {
        QFETCH(int, type);
        QFETCH(bool, int8);
        const auto mode = int8 ? arbor::Activations::Int8 : arbor::Activations::Float;
        const int64_t rows = 200, cols = 256, n_x = 70;
        const Matrix w = random_matrix(DType(type), rows, cols, 31);
        const auto x = random_rows(n_x, cols, 32);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        const auto want = contract_products(w, x, n_x, arbor::panel_code_limit(mode));
        arbor::MatmulScratch scratch;
        for (int threads : {1, 3}) {
            arbor::ThreadPool pool(threads);
            std::vector<float> batch(size_t(n_x * rows));
            const arbor::MatmulOutput all[] = {{w.view(), batch.data(), rows, nullptr, &p}};
            arbor::matmul(pool, x.data(), n_x, all, scratch, mode);
            QVERIFY2(first_bit_difference(batch, want).isEmpty(), qPrintable(first_bit_difference(batch, want)));
            for (int64_t t : {int64_t(0), int64_t(9), n_x - 1}) {
                std::vector<float> alone(static_cast<size_t>(rows));
                const arbor::MatmulOutput one[] = {{w.view(), alone.data(), rows, nullptr, &p}};
                arbor::matmul(pool, x.data() + t * cols, 1, one, scratch, mode);
                const std::vector<float> in_batch(batch.begin() + t * rows, batch.begin() + (t + 1) * rows);
                QVERIFY2(first_bit_difference(alone, in_batch).isEmpty(),
                         qPrintable(QString("row %1, %2 threads: %3").arg(t).arg(threads).arg(first_bit_difference(alone, in_batch))));
            }
        }
    }

    // Rows the caller quantized itself (PanelRows::Ready) give the bits of rows matmul
    // quantizes; rows of another shape are refused.
    void rowsQuantizedByTheCaller() {
        const int64_t rows = 40, cols = 128, n_x = 9;
        const Matrix w = random_matrix(DType::Q4_1, rows, cols, 51);
        const auto x = random_rows(n_x, cols, 52);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(w.view());
        arbor::ThreadPool pool(2);
        arbor::MatmulScratch scratch;
        std::vector<float> want(size_t(n_x * rows)), got(size_t(n_x * rows), NAN);
        const arbor::MatmulOutput by_matmul[] = {{w.view(), want.data(), rows, nullptr, &p}};
        arbor::matmul(pool, x.data(), n_x, by_matmul, scratch);
        QVERIFY(arbor::uses_panel_rows(by_matmul, arbor::Activations::Float));
        QVERIFY(arbor::uses_panel_rows(by_matmul, arbor::Activations::Int8));

        arbor::MatmulScratch ready;
        ready.panel_activations.resize(n_x, cols);
        for (int64_t t = 0; t < n_x; ++t) ready.panel_activations.quantize_row(t, x.data() + t * cols);
        const arbor::MatmulOutput by_caller[] = {{w.view(), got.data(), rows, nullptr, &p}};
        arbor::matmul(pool, x.data(), n_x, by_caller, ready, arbor::Activations::Float, arbor::PanelRows::Ready);
        QVERIFY2(first_bit_difference(got, want).isEmpty(), qPrintable(first_bit_difference(got, want)));

        // Int8 mode wants 8-bit codes: 16-bit rows are refused.
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, arbor::matmul(pool, x.data(), n_x, by_caller, ready,
                                                                      arbor::Activations::Int8, arbor::PanelRows::Ready));
        ready.panel_activations.resize(n_x - 1, cols);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, arbor::matmul(pool, x.data(), n_x, by_caller, ready,
                                                                      arbor::Activations::Float, arbor::PanelRows::Ready));
    }

    // Int8 mode with one output in panels and one in GGUF order (a matrix that was not
    // packed): each gets the bits it gets alone, the panel one the contract's with 8-bit
    // codes, the other the Q8 products'.
    void int8MixesPanelsAndGgufOrder() {
        const int64_t rows = 40, cols = 256, n_x = 5;
        const Matrix a = random_matrix(DType::Q4_K, rows, cols, 71), b = random_matrix(DType::Q6_K, rows, cols, 72);
        const auto x = random_rows(n_x, cols, 73);
        const arbor::PanelWeights p = arbor::PanelWeights::pack(a.view());
        arbor::ThreadPool pool(2);
        arbor::MatmulScratch scratch;
        std::vector<float> ya(size_t(n_x * rows)), yb(size_t(n_x * rows)), alone(size_t(n_x * rows));
        const arbor::MatmulOutput both[] = {{a.view(), ya.data(), rows, nullptr, &p}, {b.view(), yb.data(), rows, nullptr}};
        arbor::matmul(pool, x.data(), n_x, both, scratch, arbor::Activations::Int8);
        const auto want = contract_products(a, x, n_x, arbor::kPanelCodeLimit8);
        QVERIFY2(first_bit_difference(ya, want).isEmpty(), qPrintable(first_bit_difference(ya, want)));
        const arbor::MatmulOutput only_b[] = {{b.view(), alone.data(), rows, nullptr}};
        arbor::matmul(pool, x.data(), n_x, only_b, scratch, arbor::Activations::Int8);
        QVERIFY2(first_bit_difference(yb, alone).isEmpty(), qPrintable(first_bit_difference(yb, alone)));
        // Not the panel contract's bits: the Q8_K products round the activations per 256.
        QVERIFY(!first_bit_difference(yb, contract_products(b, x, n_x, arbor::kPanelCodeLimit8)).isEmpty());
    }

    void rejectsWhatItCannotPack() {
        QVERIFY(arbor::PanelWeights::packable(DType::Q4_0, 64));
        QVERIFY(arbor::PanelWeights::packable(DType::Q4_1, 64));
        QVERIFY(arbor::PanelWeights::packable(DType::Q8_0, 32));
        QVERIFY(arbor::PanelWeights::packable(DType::Q4_K, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::Q5_K, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::Q6_K, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::Q5_0, 32));
        QVERIFY(arbor::PanelWeights::packable(DType::Q5_1, 32));
        QVERIFY(arbor::PanelWeights::packable(DType::IQ4_NL, 32));
        QVERIFY(arbor::PanelWeights::packable(DType::IQ4_XS, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::Q3_K, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::Q2_K, 256));
        QVERIFY(arbor::PanelWeights::packable(DType::MXFP4, 32));
        QVERIFY(!arbor::PanelWeights::packable(DType::Q2_K, 224));
        QVERIFY(!arbor::PanelWeights::packable(DType::MXFP4, 48));
        QVERIFY(!arbor::PanelWeights::packable(DType::Q4_K, 224));  // not whole super-blocks
        QVERIFY(!arbor::PanelWeights::packable(DType::Q6_K, 224));
        QVERIFY(!arbor::PanelWeights::packable(DType::IQ4_XS, 224));
        for (DType type : {DType::F32, DType::F16, DType::BF16})
            QVERIFY2(!arbor::PanelWeights::packable(type, 256), qPrintable(type_name(type)));
        QVERIFY(!arbor::PanelWeights::packable(DType::Q4_1, 48));
        const Matrix f32 = random_matrix(DType::F32, 8, 64, 41);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, arbor::PanelWeights::pack(f32.view()));
        // A Q4_0 scale whose minimum -8 d is no finite half (the largest that is: 8188).
        Matrix q4_0 = random_matrix(DType::Q4_0, 8, 64, 45);
        auto* blocks = reinterpret_cast<arbor::BlockQ4_0*>(q4_0.bytes.data());
        blocks[0].d = arbor::fp32_to_fp16(8188.0f);
        arbor::PanelWeights::pack(q4_0.view());
        for (float d : {8192.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
            blocks[5].d = arbor::fp32_to_fp16(d);
            QVERIFY_THROWS_EXCEPTION(std::invalid_argument, arbor::PanelWeights::pack(q4_0.view()));
        }

        // Panels of another matrix are refused, not misread.
        const Matrix a = random_matrix(DType::Q4_1, 16, 64, 42), b = random_matrix(DType::Q4_1, 24, 64, 43);
        const arbor::PanelWeights pb = arbor::PanelWeights::pack(b.view());
        const auto x = random_rows(1, 64, 44);
        std::vector<float> y(16);
        arbor::ThreadPool pool(1);
        arbor::MatmulScratch scratch;
        const arbor::MatmulOutput wrong[] = {{a.view(), y.data(), 16, nullptr, &pb}};
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, arbor::matmul(pool, x.data(), 1, wrong, scratch));
    }
};

QTEST_APPLESS_MAIN(TestPanelWeights)
#include "test_panel_weights.moc"
