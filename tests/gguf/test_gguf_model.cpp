// The GGUF reader on real files: the default model, checked against facts read with the
// independent `gguf` Python package, and the vocab-only fixtures of tests/data/tokenizer.
#include "arbor/gguf.h"
#include "test_support.h"

#include <algorithm>
#include <chrono>

using namespace arbor;

class TestGgufModel : public QObject {
    Q_OBJECT

private slots:
    void defaultModel();
    void fixtureVocabFiles();
};

void TestGgufModel::defaultModel() {
    ARBOR_REQUIRE_MODEL();
    const auto start = std::chrono::steady_clock::now();
    const auto f = GgufFile::open(test::model_path());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("opened the default model in %.1f ms", seconds * 1000.0);
    QVERIFY2(seconds < 1.0, "opening the default model took a second or more");

    QCOMPARE(f->version(), uint32_t(3));
    QCOMPARE(f->alignment(), size_t(32));
    QCOMPARE(f->tensors().size(), size_t(272));
    QCOMPARE(f->require_string("general.architecture"), std::string("llama"));
    QCOMPARE(f->require_uint("llama.block_count"), uint64_t(30));
    QCOMPARE(f->require_uint("llama.embedding_length"), uint64_t(576));

    const GgufTensor* emb = f->find_tensor("token_embd.weight");
    QVERIFY(emb != nullptr);
    QVERIFY(emb->type == DType::Q8_0);
    QCOMPARE(emb->dims, (std::vector<int64_t>{576, 49152}));
    QCOMPARE(emb->n_bytes, size_t(576 / 32 * 34) * 49152);

    const GgufTensor* down = f->find_tensor("blk.0.ffn_down.weight");
    QVERIFY(down != nullptr);
    QVERIFY(down->type == DType::Q4_1);
    QCOMPARE(down->dims, (std::vector<int64_t>{1536, 576}));
    QCOMPARE(down->n_bytes, size_t(1536 / 32 * 20) * 576);

    const GgufValue* tokens = f->find("tokenizer.ggml.tokens");
    QVERIFY(tokens != nullptr);
    QVERIFY(tokens->element_type == GgufType::String);
    const auto* list = tokens->as_array();
    QVERIFY(list != nullptr);
    QCOMPARE(list->size(), size_t(49152));
    for (const auto& t : *list) QVERIFY(t.as_string() != nullptr);

    // Sorted by offset, tensors follow each other with only alignment padding between,
    // which holds only if every byte size was computed right.
    std::vector<const GgufTensor*> sorted;
    for (const auto& t : f->tensors()) sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(),
              [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
    QCOMPARE(sorted.front()->offset, uint64_t(0));
    for (size_t i = 1; i < sorted.size(); ++i) {
        const uint64_t end = sorted[i - 1]->offset + sorted[i - 1]->n_bytes;
        QVERIFY2(sorted[i]->offset >= end && sorted[i]->offset - end < 32,
                 sorted[i]->name.c_str());
        QCOMPARE(sorted[i]->data - sorted[0]->data, ptrdiff_t(sorted[i]->offset));
    }
    const uint64_t data_bytes = sorted.back()->offset + sorted.back()->n_bytes;
    QVERIFY(data_bytes < std::filesystem::file_size(test::model_path()));
}

void TestGgufModel::fixtureVocabFiles() {
    const auto dir = test::test_data_dir() / "tokenizer";
    QVERIFY2(std::filesystem::is_directory(dir), dir.c_str());
    int opened = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".gguf") continue;
        try {
            const auto f = GgufFile::open(entry.path());
            QVERIFY2(f->tensors().empty(), entry.path().c_str());
            QVERIFY2(f->find("tokenizer.ggml.tokens") != nullptr, entry.path().c_str());
            QVERIFY2(f->get_string("tokenizer.ggml.model").has_value(), entry.path().c_str());
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        ++opened;
    }
    QVERIFY2(opened >= 9, "expected the nine vocab files of tests/data/tokenizer");
}

QTEST_APPLESS_MAIN(TestGgufModel)
#include "test_gguf_model.moc"
