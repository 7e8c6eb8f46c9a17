// CUDA kernels against the CPU scalar references. Without a CUDA device every test
// skips with the reason; it never passes silently.
#include "arbor/kernels/cpu_ops.h"
#include "arbor/kernels/cuda_kernels.h"
#include "arbor/kernels/fp16.h"
#include "arbor/kernels/matmul.h"
#include "arbor/kernels/quant.h"
#include "arbor/kernels/quant_blocks.h"

#include <QtTest>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

template <class T>
T* to_device(const std::vector<T>& v) {
    T* p = nullptr;
    cudaMalloc(&p, v.size() * sizeof(T));
    cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
    return p;
}

// Quantizes random floats with the CPU quantizer of the activation type of the same
// block layout (Q8_0), or builds valid blocks for the other types.
std::vector<uint8_t> make_weights(arbor::DType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint8_t> bytes(arbor::row_bytes(type, cols) * size_t(rows));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        for (auto& v : row) v = normal(rng);
        uint8_t* dst = bytes.data() + size_t(r) * arbor::row_bytes(type, cols);
        if (type == arbor::DType::F32) {
            std::memcpy(dst, row.data(), row.size() * 4);
        } else if (type == arbor::DType::F16) {
            for (int64_t c = 0; c < cols; ++c) {
                const uint16_t h = arbor::fp32_to_fp16(row[size_t(c)]);
                std::memcpy(dst + 2 * c, &h, 2);
            }
        } else if (type == arbor::DType::Q8_0) {
            arbor::quantize_row(arbor::DType::Q8_0, row.data(), dst, cols, arbor::Isa::Scalar);
        } else {  // Q4_1: random nibbles with a sane scale and minimum
            std::uniform_int_distribution<int> byte(0, 255);
            auto* blocks = reinterpret_cast<arbor::BlockQ4_1*>(dst);
            for (int64_t b = 0; b < cols / 32; ++b) {
                blocks[b].d = arbor::fp32_to_fp16(0.05f);
                blocks[b].m = arbor::fp32_to_fp16(-0.4f);
                for (auto& q : blocks[b].qs) q = uint8_t(byte(rng));
            }
        }
    }
    return bytes;
}

} // namespace

class TestCudaKernels : public QObject {
    Q_OBJECT
    bool have_device_ = false;
    QString why_not_;

private slots:
    void initTestCase() {
        std::string why;
        have_device_ = arbor::cuda::device_count(&why) > 0;
        why_not_ = QString::fromStdString(why);
    }

    void matvecMatchesCpuReference_data() {
        QTest::addColumn<int>("type");
        for (auto t : {arbor::DType::F32, arbor::DType::F16, arbor::DType::Q8_0, arbor::DType::Q4_1})
            QTest::newRow(arbor::dtype_name(t).data()) << int(t);
    }
    void matvecMatchesCpuReference() {
        if (!have_device_) QSKIP(qPrintable("no CUDA device, CUDA kernels not run: " + why_not_));
        QFETCH(int, type);
        const auto dtype = arbor::DType(type);
        const int64_t rows = 300, cols = 576;
        std::mt19937 rng(5);
        const auto w = make_weights(dtype, rows, cols, rng);
        std::vector<float> x(static_cast<size_t>(cols)), want(static_cast<size_t>(rows)), got(static_cast<size_t>(rows));
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (auto& v : x) v = normal(rng);
        arbor::matmul_reference(x.data(), 1, {{dtype, cols, rows, w.data(), arbor::row_bytes(dtype, cols)}, want.data(), rows, nullptr});

        auto* dw = to_device(w);
        auto* dx = to_device(x);
        float* dy = nullptr;
        cudaMalloc(&dy, got.size() * sizeof(float));
        QVERIFY(arbor::cuda::matvec(dtype, dw, rows, cols, dx, dy, nullptr));
        cudaMemcpy(got.data(), dy, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
        QCOMPARE(cudaGetLastError(), cudaSuccess);
        cudaFree(dw);
        cudaFree(dx);
        cudaFree(dy);
        for (int64_t r = 0; r < rows; ++r)
            QVERIFY2(std::fabs(got[size_t(r)] - want[size_t(r)]) <= 1e-3f + 1e-4f * std::fabs(want[size_t(r)]),
                     qPrintable(QString("row %1: %2 vs %3").arg(r).arg(got[size_t(r)]).arg(want[size_t(r)])));
    }

    void rmsNormMatchesCpuReference() {
        if (!have_device_) QSKIP(qPrintable("no CUDA device, CUDA kernels not run: " + why_not_));
        const int64_t n = 1000;
        std::vector<float> x(static_cast<size_t>(n)), w(static_cast<size_t>(n)), want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
        std::mt19937 rng(9);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (auto& v : x) v = normal(rng);
        for (auto& v : w) v = normal(rng);
        arbor::rms_norm(x.data(), w.data(), want.data(), n, 1e-5f);
        auto* dx = to_device(x);
        auto* dw = to_device(w);
        float* dy = nullptr;
        cudaMalloc(&dy, got.size() * sizeof(float));
        arbor::cuda::rms_norm(dx, dw, dy, n, 1e-5f, nullptr);
        cudaMemcpy(got.data(), dy, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
        cudaFree(dx);
        cudaFree(dw);
        cudaFree(dy);
        for (int64_t i = 0; i < n; ++i) QVERIFY(std::fabs(got[size_t(i)] - want[size_t(i)]) <= 1e-5f + 1e-5f * std::fabs(want[size_t(i)]));
    }
};

QTEST_APPLESS_MAIN(TestCudaKernels)
#include "test_cuda_kernels.moc"
