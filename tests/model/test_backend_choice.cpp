// BackendOptions::device through make_backend and the engine: "cpu", "auto" falling back
// to the CPU with its reason where no GPU can be used, "cuda" refused with the reason
// there (or run on the CPU with cpu_fallback), KV types the GPU cannot keep, names that
// are no device refused, and the list of GPUs with why it is empty. (On a GPU machine,
// "auto" and "cuda" give the CUDA backend; tests/cuda covers it.)
#include "test_support.h"

#include "arbor/backend.h"
#include "arbor/cuda_devices.h"
#include "arbor/engine.h"
#include "arbor/error.h"
#include "arbor/model.h"

#include <QFile>

#include <dlfcn.h>

namespace {

std::string refusal(const arbor::Model& model, const std::string& device, arbor::KvType kv_type = arbor::KvType::F16) {
    arbor::BackendOptions options;
    options.device = device;
    options.kv_type = kv_type;
    options.kv_tokens = 64;
    try {
        arbor::make_backend(model, options);
    } catch (const arbor::Error& e) {
        return e.what();
    }
    return {};
}

} // namespace

class TestBackendChoice : public QObject {
    Q_OBJECT
    std::unique_ptr<arbor::Model> model_;

private slots:
    void initTestCase() { model_ = arbor::Model::load(arbor::test::model_path()); }

    void cpuIsTheCpuBackend() {
        arbor::BackendOptions options;
        options.kv_tokens = 64;
        std::string fallback = "stale";
        const auto backend = arbor::make_backend(*model_, options, &fallback);
        QCOMPARE(backend->name(), std::string("cpu"));
        QVERIFY(backend->description().rfind("CPU (", 0) == 0);
        QVERIFY(fallback.empty());
    }

    void autoFallsBackWithItsReason() {
        arbor::BackendOptions options;
        options.device = "auto";
        options.kv_tokens = 64;
        std::string fallback;
        const auto backend = arbor::make_backend(*model_, options, &fallback);
        if (backend->name() == "cuda") {
            QVERIFY(fallback.empty());
            QSKIP("a CUDA device is present: auto took it (tests/cuda checks that backend)");
        }
        QCOMPARE(backend->name(), std::string("cpu"));
        QVERIFY2(!fallback.empty(), "auto on the CPU says why no GPU was used");
        qInfo("auto fell back to the CPU: %s", fallback.c_str());
    }

    void cudaWithoutAGpuIsRefusedWithTheReason() {
        arbor::BackendOptions options;
        options.device = "auto";
        options.kv_tokens = 64;
        std::string fallback;
        if (arbor::make_backend(*model_, options, &fallback)->name() == "cuda") QSKIP("a CUDA device is present");
        const std::string why = refusal(*model_, "cuda");
        QVERIFY2(why.find("device cuda unavailable: " + fallback) == 0, why.c_str());
        QVERIFY(refusal(*model_, "cuda:3").find("device cuda:3 unavailable") == 0);
    }

    // The CUDA backend stores F16 pages only: a Q8_0 or F32 cache is refused on every
    // machine, "auto" running on the CPU with that reason.
    void kvTypesOtherThanF16RunOnTheCpuWithTheReason() {
        QVERIFY(arbor::cuda_kv_type_refusal(arbor::KvType::F16).empty());
        for (arbor::KvType type : {arbor::KvType::Q8_0, arbor::KvType::F32}) {
            arbor::BackendOptions options;
            options.device = "auto";
            options.kv_tokens = 64;
            options.kv_type = type;
            std::string fallback;
            const auto backend = arbor::make_backend(*model_, options, &fallback);
            QCOMPARE(backend->name(), std::string("cpu"));
            QCOMPARE(backend->kv_type(), type);
            QCOMPARE(fallback, arbor::cuda_kv_type_refusal(type));
            QVERIFY2(fallback.find(std::string("F16 only, not ") + arbor::kv_type_name(type)) != std::string::npos,
                     fallback.c_str());
            QCOMPARE(refusal(*model_, "cuda", type), "device cuda unavailable: " + fallback);
        }
    }

    // The desktop app's choice: a named GPU that cannot be had runs on the CPU, with the
    // same reason "cuda" alone is refused with.
    void cpuFallbackTakesTheCpuForANamedGpu() {
        arbor::BackendOptions options;
        options.device = "cuda:0";
        options.cpu_fallback = true;
        options.kv_tokens = 64;
        std::string fallback;
        const auto backend = arbor::make_backend(*model_, options, &fallback);
        if (backend->name() == "cuda") QSKIP("a CUDA device is present: cuda:0 took it");
        QCOMPARE(backend->name(), std::string("cpu"));
        QVERIFY(!fallback.empty());
        QCOMPARE(refusal(*model_, "cuda:0"), "device cuda:0 unavailable: " + fallback);
        options.device = "gpu";  // still no device name
        QVERIFY_THROWS_EXCEPTION(arbor::Error, arbor::make_backend(*model_, options));
    }

    // The list the app's Device setting shows: here (no GPU, and in a build without CUDA
    // no library either) empty with the reason, the same one "auto" falls back with.
    void findingGpusWithoutOneGivesTheReason() {
        const arbor::CudaDevices found = arbor::find_cuda_devices();
        if (!found.devices.empty()) {
            for (const auto& d : found.devices) {
                QVERIFY(!d.name.empty() && d.total_bytes > 0);
                QVERIFY(!d.free_bytes || *d.free_bytes <= d.total_bytes);
            }
            QVERIFY(found.none_reason.empty());
            QSKIP("a CUDA device is present (its listing is checked above)");
        }
        QVERIFY(!found.none_reason.empty());
        qInfo("no GPU: %s", found.none_reason.c_str());
        // With the library (built here, or named by ARBOR_CUDA_LIBRARY) the reason is the
        // runtime's: no driver, or no device.
        bool library = !qEnvironmentVariableIsEmpty("ARBOR_CUDA_LIBRARY");
#ifdef ARBOR_TEST_HAVE_CUDA
        library = true;
#endif
        if (library)
            QVERIFY2(found.none_reason.find("driver") != std::string::npos ||
                         found.none_reason.find("device") != std::string::npos,
                     found.none_reason.c_str());
        else
            QCOMPARE(found.none_reason, std::string("this build has no CUDA backend (libarbor_cuda.so not found)"));
        arbor::BackendOptions options;
        options.device = "auto";
        options.kv_tokens = 64;
        std::string fallback;
        QCOMPARE(arbor::make_backend(*model_, options, &fallback)->name(), std::string("cpu"));
        QCOMPARE(fallback, found.none_reason);
        // Asked again, the answer is the same (the library is opened once).
        QCOMPARE(arbor::find_cuda_devices().none_reason, found.none_reason);
    }

    // Without the NVIDIA driver, choosing "auto" and listing devices never load the CUDA
    // backend's library, nor the CUDA runtime and cuBLAS it links (tens of MB resident).
    void withoutADriverNoCudaLibraryIsLoaded() {
        if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
            dlclose(driver);
            QSKIP("an NVIDIA driver is installed here: the CUDA libraries are loaded to ask it");
        }
        arbor::BackendOptions options;
        options.device = "auto";
        options.kv_tokens = 64;
        QCOMPARE(arbor::make_backend(*model_, options)->name(), std::string("cpu"));
        QVERIFY(arbor::find_cuda_devices().devices.empty());
        QFile maps("/proc/self/maps");
        QVERIFY(maps.open(QIODevice::ReadOnly));
        const QByteArray mapped = maps.readAll();
        QVERIFY(!mapped.isEmpty());
        for (const char* library : {"libarbor_cuda", "libcublas", "libcudart"})
            QVERIFY2(!mapped.contains(library), library);
    }

    void kvTypeNamesRoundTrip() {
        for (arbor::KvType t : {arbor::KvType::F16, arbor::KvType::F32, arbor::KvType::Q8_0})
            QCOMPARE(arbor::kv_type_from_name(arbor::kv_type_name(t)), std::optional(t));
        QCOMPARE(std::string(arbor::kv_type_name(arbor::KvType::Q8_0)), std::string("q8_0"));
        for (const char* bad : {"q8", "Q8_0", "f8", ""}) QVERIFY2(!arbor::kv_type_from_name(bad), bad);
    }

    void namesThatAreNoDeviceAreRefused() {
        for (const std::string bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", " cpu"})
            QVERIFY2(refusal(*model_, bad).find("unknown device '" + bad + "'") == 0, bad.c_str());
    }

    void theEngineSaysWhatRunsIt() {
        arbor::EngineOptions options;
        options.backend.device = "auto";
        options.backend.kv_tokens = 64;
        arbor::Engine engine(*model_, options);
        if (engine.device().rfind("CUDA", 0) == 0) {
            QVERIFY(engine.device_fallback().empty());
            return;
        }
        QVERIFY(engine.device().rfind("CPU (", 0) == 0);
        QVERIFY(!engine.device_fallback().empty());
        options.backend.device = "cpu";
        arbor::Engine on_cpu(*model_, options);
        QVERIFY(on_cpu.device_fallback().empty());
    }
};

QTEST_GUILESS_MAIN(TestBackendChoice)
#include "test_backend_choice.moc"
