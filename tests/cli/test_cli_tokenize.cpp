// arbor-cli tokenize on GGUF files that carry only a vocabulary: llama.cpp's
// ggml-vocab-*.gguf of architectures the engine cannot run (tests/data/tokenizer, with
// the reference ids of their inputs) and a vocabulary written here. No model needed.
#include "cli_process.h"
#include "test_support.h"

#include "../gguf/gguf_test_writer.h"

#include <QTemporaryDir>

#include <fstream>
#include <sstream>

namespace {

using Run = arbor::test::CliRun;
using arbor::test::run_cli;

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

class TestCliTokenize : public QObject {
    Q_OBJECT
private slots:
    // The first four inputs of each file give the reference ids of the first four lines
    // of its .out, printed by arbor-cli as a JSON array.
    void tokenizesVocabularyOnlyFilesOfOtherArchitectures_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("falcon") << "falcon";
        QTest::newRow("mpt") << "mpt";
        QTest::newRow("starcoder2") << "starcoder";
        QTest::newRow("gpt2") << "gpt-2";
        QTest::newRow("bert (WordPiece)") << "bert-bge";
        QTest::newRow("t5 (Unigram)") << "nomic-bert-moe";
        QTest::newRow("rwkv") << "rwkv-synthetic";
        QTest::newRow("gemma4 (SentencePiece-style BPE)") << "gemma-4";
    }

    void tokenizesVocabularyOnlyFilesOfOtherArchitectures() {
        QFETCH(QString, name);
        const auto base = arbor::test::test_data_dir() / "tokenizer" / ("ggml-vocab-" + name.toStdString() + ".gguf");
        const std::string inputs = read_file(base.string() + ".inp");
        std::istringstream outputs(read_file(base.string() + ".out"));
        const std::string sep = "\n__ggml_vocab_test__\n";
        size_t pos = 0;
        for (int i = 0; i < 4; ++i) {
            const size_t next = inputs.find(sep, pos);
            QVERIFY(next != std::string::npos);
            std::string ids;
            std::getline(outputs, ids);
            const std::string text = inputs.substr(pos, next - pos);
            pos = next + sep.size();
            const Run r = run_cli({"tokenize", "--model", QString::fromStdString(base.string()), "--no-bos",
                                   "--no-special"},
                                  QByteArray::fromStdString(text));
            QVERIFY2(r.exit_code == 0, qPrintable(r.err));
            QString expected = "[" + QString::fromStdString(ids).trimmed().replace(' ', ',') + "]";
            QCOMPARE(r.out.trimmed(), expected);
        }
    }

    // A vocabulary of an architecture nobody runs here, with a pre-tokenizer name nobody
    // knows: tokenized with gpt2's splitting, and the warning says so.
    void unknownPreTokenizerIsAWarningNotAFailure() {
        using namespace arbor::test;
        GgufWriter w;
        w.add("general.architecture", gv::str("rwkv7"));
        w.add("tokenizer.ggml.model", gv::str("gpt2"));
        w.add("tokenizer.ggml.pre", gv::str("no-such-splitting"));
        w.add("tokenizer.ggml.tokens", gv::arr(arbor::GgufType::String,
                                               {gv::str("a"), gv::str("b"), gv::str("ab"), gv::str("\u0120")}));
        w.add("tokenizer.ggml.merges", gv::arr(arbor::GgufType::String, {gv::str("a b")}));
        QTemporaryDir dir;
        const std::string path = dir.filePath("vocab.gguf").toStdString();
        write_file(path, w.bytes());
        // gpt2 splitting: "ab", " ", "ab" ("ab ab": the space joins the next word, Ġ + ab
        // has no merge, so Ġ and ab).
        const Run r = run_cli({"tokenize", "--model", QString::fromStdString(path), "--no-bos"}, "ab ab");
        QVERIFY2(r.exit_code == 0, qPrintable(r.err));
        QCOMPARE(r.out.trimmed(), QString("[2,3,2]"));
        QVERIFY2(r.err.contains("unknown pre-tokenizer 'no-such-splitting'"), qPrintable(r.err));
    }

    void fileWithoutVocabularyIsAClearError() {
        using namespace arbor::test;
        GgufWriter w;
        w.add("general.architecture", gv::str("falcon"));
        QTemporaryDir dir;
        const std::string path = dir.filePath("empty.gguf").toStdString();
        write_file(path, w.bytes());
        const Run r = run_cli({"tokenize", "--model", QString::fromStdString(path)}, "hello");
        QVERIFY(r.exit_code != 0);
        QVERIFY2(r.err.contains("tokenizer.ggml.model"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCliTokenize)
#include "test_cli_tokenize.moc"
