// Resident memory of the model's file mapping: the CPU backend's panel copies replace
// the packed matrices' pages (released, yet still readable from the file), the token
// embedding's too when the output projection is tied to it (lookups then read the
// panels).
#include "test_support.h"

#include "arbor/backend.h"
#include "arbor/model.h"

#include <QFile>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unistd.h>

namespace {

// Resident kilobytes of the mapping that contains `address`, from /proc/self/smaps;
// -1 when no mapping contains it.
int64_t resident_kb(const void* address) {
    QFile smaps("/proc/self/smaps");
    if (!smaps.open(QIODevice::ReadOnly | QIODevice::Text)) return -1;
    const auto at = quintptr(address);
    bool inside = false;
    for (const QByteArray& line : smaps.readAll().split('\n')) {
        // A mapping starts with "start-end perms offset dev inode [path]"; its fields
        // ("Rss:   120 kB") follow.
        const QList<QByteArray> range = line.left(line.indexOf(' ')).split('-');
        bool ok_start = false, ok_end = false;
        const quintptr start = range.size() == 2 ? range[0].toULongLong(&ok_start, 16) : 0;
        const quintptr end = range.size() == 2 ? range[1].toULongLong(&ok_end, 16) : 0;
        if (ok_start && ok_end) inside = start <= at && at < end;
        else if (inside && line.startsWith("Rss:")) return line.mid(4).trimmed().split(' ').first().toLongLong();
    }
    return -1;
}

// Reads one byte of every page so that the whole range is resident; returns a checksum.
uint64_t touch(const uint8_t* data, size_t bytes) {
    const auto page = size_t(::sysconf(_SC_PAGESIZE));
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i += page) sum = sum * 31 + data[i];
    return sum + data[bytes - 1];
}

size_t tensor_bytes(const arbor::TensorView& t) {
    return size_t(t.rows) * t.row_stride;
}

} // namespace

class TestWeightPages : public QObject {
    Q_OBJECT

private slots:
    void packedMatricesReleaseTheirFilePages() {
        ARBOR_REQUIRE_MODEL();
        const auto model = arbor::Model::load(arbor::test::model_path());
        const auto& w = model->weights();
        QVERIFY2(w.layers.front().w_gate.type == arbor::DType::Q4_1, "the default model's layer matrices are Q4_1");
        QVERIFY2(w.output.data == w.token_embd.data && w.token_embd.type == arbor::DType::Q8_0,
                 "the default model's output projection is its Q8_0 token embedding");

        std::vector<const arbor::TensorView*> packed = {&w.token_embd};
        for (const auto& lw : w.layers)
            for (const arbor::TensorView* t : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
                packed.push_back(t);
        uint64_t packed_bytes = 0, before_sum = 0;
        for (const auto* t : packed) {
            before_sum += touch(t->data, tensor_bytes(*t));
            packed_bytes += tensor_bytes(*t);
        }
        const int64_t before_kb = resident_kb(w.token_embd.data);
        QVERIFY2(before_kb > 0, "the model's mapping is listed in /proc/self/smaps");
        QVERIFY(uint64_t(before_kb) * 1024 >= packed_bytes);

        arbor::BackendOptions options;
        options.kv_tokens = 256;
        options.threads = 1;
        const auto backend = arbor::make_cpu_backend(*model, options);
        const int64_t after_kb = resident_kb(w.token_embd.data);
        qInfo("mapping resident: %lld kB before the backend, %lld kB after; packed matrices %llu kB",
              static_cast<long long>(before_kb), static_cast<long long>(after_kb),
              static_cast<unsigned long long>(packed_bytes / 1024));
        // At most the two partial pages at the ends of each packed matrix stay.
        const uint64_t kept_slack = 2 * uint64_t(::sysconf(_SC_PAGESIZE)) * packed.size();
        QVERIFY(uint64_t(before_kb - after_kb) * 1024 + kept_slack >= packed_bytes);

        // A step looks up embeddings and runs every product without the file's pages
        // (the tokens' embedding rows lie on three different pages of the file).
        arbor::ForwardBatch batch;
        batch.tokens = {1, 20000, 40000};
        const std::vector<int32_t> pages = {0};
        batch.sequences.push_back({0, 3, 0, pages, arbor::SequenceRows::Logits::Last});
        std::vector<float> logits;
        backend->forward(batch, logits);
        QCOMPARE(logits.size(), size_t(model->config().n_vocab));
        QVERIFY(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
        const int64_t stepped_kb = resident_kb(w.token_embd.data);
        qInfo("after a step: %lld kB", static_cast<long long>(stepped_kb));
        QVERIFY2(stepped_kb <= after_kb + 8, "a step reads no released page back");

        // Nothing is lost: the released bytes read back from the file unchanged.
        uint64_t after_sum = 0;
        for (const auto* t : packed) after_sum += touch(t->data, tensor_bytes(*t));
        QCOMPARE(after_sum, before_sum);
    }

    void ggufOrderKeepsItsPages() {
        ARBOR_REQUIRE_MODEL();
        const auto model = arbor::Model::load(arbor::test::model_path());
        const arbor::TensorView& gate = model->weights().layers.front().w_gate;
        touch(gate.data, tensor_bytes(gate));
        const int64_t before_kb = resident_kb(gate.data);
        arbor::BackendOptions options;
        options.kv_tokens = 256;
        options.threads = 1;
        options.panel_weights = false;
        const auto backend = arbor::make_cpu_backend(*model, options);
        // Products read the GGUF rows themselves: nothing may be released.
        QVERIFY(resident_kb(gate.data) >= before_kb);
    }

    void releaseOutsideTheMappingIsAnError() {
        ARBOR_REQUIRE_MODEL();
        const auto model = arbor::Model::load(arbor::test::model_path());
        const uint8_t outside[64] = {};
        QVERIFY_THROWS_EXCEPTION(arbor::Error, model->file().release_pages(outside, sizeof outside));
        const arbor::TensorView& embd = model->weights().token_embd;
        QVERIFY_THROWS_EXCEPTION(arbor::Error, model->file().release_pages(embd.data, size_t(1) << 40));
    }
};

QTEST_APPLESS_MAIN(TestWeightPages)
#include "test_weight_pages.moc"
