// The model library over real files in temporary folders: headers written by the tests'
// GGUF writer (values known here), the synthetic qwen2 model of tests/data (its README
// gives the shapes the parameter count is summed from), a tokenizer-only falcon file the
// engine cannot run, and a file that is not GGUF at all.
#include "model_library.h"
#include "model_test_files.h"
#include "test_support.h"

#include <QDesktopServices>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QUrl>

using namespace arbor;
using namespace arbor::app;

// Stands in for the desktop's file manager: receives the file:// URLs the app opens.
class UrlCatcher : public QObject {
    Q_OBJECT
public:
    QList<QUrl> opened;
public slots:
    void open(const QUrl& url) { opened << url; }
};

namespace {

QString str(const std::filesystem::path& p) { return QString::fromStdString(p.string()); }

int rowOf(const ModelLibrary& lib, const QString& fileName) {
    for (int i = 0; i < lib.rowCount(); ++i)
        if (lib.data(lib.index(i), ModelLibrary::FileNameRole).toString() == fileName) return i;
    return -1;
}

QVariant field(const ModelLibrary& lib, const QString& fileName, int role) {
    const int row = rowOf(lib, fileName);
    return row < 0 ? QVariant() : lib.data(lib.index(row), role);
}

} // namespace

class TestModelLibrary : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::filesystem::path models_, extra_;

private slots:
    void init() {
        QVERIFY(tmp_.isValid());
        models_ = std::filesystem::path(tmp_.path().toStdString()) / "models";
        extra_ = std::filesystem::path(tmp_.path().toStdString()) / "extra";
        std::filesystem::remove_all(models_);
        std::filesystem::remove_all(extra_);
        std::filesystem::create_directories(models_);
        std::filesystem::create_directories(extra_);
    }

    void parameterCountsAsPeopleQuoteThem() {
        QCOMPARE(QString::fromStdString(parameterCountText(960)), QString("960"));
        QCOMPARE(QString::fromStdString(parameterCountText(134'515'008)), QString("135M"));
        QCOMPARE(QString::fromStdString(parameterCountText(1'543'714'816ull)), QString("1.5B"));
        QCOMPARE(QString::fromStdString(parameterCountText(27'009'002'240ull)), QString("27B"));
        QCOMPARE(QString::fromStdString(fileTypeName(15)), QString("Q4_K_M"));
        QCOMPARE(QString::fromStdString(fileTypeName(4)), QString());  // retired value
    }

    void describesAFileFromItsHeader() {
        test::writeGguf(models_ / "tiny-llama.gguf", test::llamaHeader("Tiny Llama", 2048, 15));
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.rowCount(), 1);
        const QString f = "tiny-llama.gguf";
        QCOMPARE(field(lib, f, ModelLibrary::NameRole).toString(), QString("Tiny Llama"));
        QCOMPARE(field(lib, f, ModelLibrary::ArchitectureRole).toString(), QString("llama"));
        QCOMPARE(field(lib, f, ModelLibrary::ParametersRole).toString(), QString("960"));
        QCOMPARE(field(lib, f, ModelLibrary::QuantTypeRole).toString(), QString("Q4_K_M"));
        QCOMPARE(field(lib, f, ModelLibrary::ContextLengthRole).toLongLong(), 2048);
        QCOMPARE(field(lib, f, ModelLibrary::FileSizeRole).toLongLong(),
                 qint64(std::filesystem::file_size(models_ / "tiny-llama.gguf")));
        QVERIFY(field(lib, f, ModelLibrary::SupportedRole).toBool());
        QCOMPARE(field(lib, f, ModelLibrary::ProblemRole).toString(), QString());
        QCOMPARE(field(lib, f, ModelLibrary::FolderRole).toString(), str(models_));
        // A tiny model fits in any machine that runs the tests; the text carries the numbers.
        QCOMPARE(field(lib, f, ModelLibrary::FitVerdictRole).toString(), QString("fits"));
        QVERIFY2(field(lib, f, ModelLibrary::FitTextRole).toString().contains("for 2048 tokens"),
                 qPrintable(field(lib, f, ModelLibrary::FitTextRole).toString()));
    }

    // Without general.file_type the quant type is the tensor type holding most weights.
    void quantTypeFallsBackToTheDominantTensorType() {
        test::writeGguf(models_ / "no-file-type.gguf", test::llamaHeader("x", 2048, -1));
        ModelLibrary lib(str(models_));
        QCOMPARE(field(lib, "no-file-type.gguf", ModelLibrary::QuantTypeRole).toString(), QString("F16"));
    }

    // qwen2-tiny (README: vocab 307, 64 wide, 2 layers, 4/2 heads of 16, FFN 128, QKV
    // biases, separate output): embeddings and output 2 x 307 x 64 = 39296, output norm 64,
    // per layer 2 norms 128 + q,o 2 x 4096 + k,v 2 x 2048 + biases 128 + FFN 3 x 8192 = 37120.
    void readsARealModel() {
        std::filesystem::copy_file(test::test_data_dir() / "synthetic" / "qwen2-tiny.gguf", models_ / "qwen2-tiny.gguf");
        ModelLibrary lib(str(models_));
        const QString f = "qwen2-tiny.gguf";
        QCOMPARE(field(lib, f, ModelLibrary::ArchitectureRole).toString(), QString("qwen2"));
        QCOMPARE(field(lib, f, ModelLibrary::ParametersRole).toString(), QString::number(39296 + 64 + 2 * 37120));
        QVERIFY(field(lib, f, ModelLibrary::SupportedRole).toBool());
        const ModelFileInfo* info = lib.find(str(models_ / "qwen2-tiny.gguf"));
        QVERIFY(info);
        QCOMPARE(info->layers, 2);
        QCOMPARE(info->kvDim, 2 * 16);
    }

    void saysWhyTheEngineCannotRunAFile() {
        std::filesystem::copy_file(test::test_data_dir() / "tokenizer" / "ggml-vocab-falcon.gguf", models_ / "falcon.gguf");
        test::write_file(models_ / "notes.gguf", {'h', 'e', 'l', 'l', 'o', '\n'});
        auto q81 = test::llamaHeader("odd weights");
        q81.add_tensor({"blk.0.attn_q.weight", 9, {32, 1}, test::pattern_bytes(36, 4)});  // Q8_1: activations only
        test::writeGguf(models_ / "q8_1.gguf", q81);
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.rowCount(), 3);
        QCOMPARE(field(lib, "falcon.gguf", ModelLibrary::ArchitectureRole).toString(), QString("falcon"));
        QVERIFY(!field(lib, "falcon.gguf", ModelLibrary::SupportedRole).toBool());
        QVERIFY2(field(lib, "falcon.gguf", ModelLibrary::ProblemRole).toString().contains("unsupported model architecture 'falcon'"),
                 qPrintable(field(lib, "falcon.gguf", ModelLibrary::ProblemRole).toString()));
        QCOMPARE(field(lib, "falcon.gguf", ModelLibrary::FitVerdictRole).toString(), QString());
        QVERIFY(!field(lib, "notes.gguf", ModelLibrary::SupportedRole).toBool());
        QVERIFY2(field(lib, "notes.gguf", ModelLibrary::ProblemRole).toString().startsWith("cannot read the GGUF header: "),
                 qPrintable(field(lib, "notes.gguf", ModelLibrary::ProblemRole).toString()));
        QCOMPARE(field(lib, "notes.gguf", ModelLibrary::FileSizeRole).toLongLong(), 6);
        QVERIFY(!field(lib, "q8_1.gguf", ModelLibrary::SupportedRole).toBool());
        QVERIFY2(field(lib, "q8_1.gguf", ModelLibrary::ProblemRole).toString().contains(
                     "tensor 'blk.0.attn_q.weight': tensor type Q8_1 (id 9) is not supported for weights"),
                 qPrintable(field(lib, "q8_1.gguf", ModelLibrary::ProblemRole).toString()));
    }

    void listsAddedFoldersAndOnlyGgufFiles() {
        test::writeGguf(models_ / "a.gguf", test::llamaHeader("a"));
        test::writeGguf(extra_ / "b.gguf", test::llamaHeader("b"));
        test::write_file(extra_ / "b.gguf.part", {1, 2, 3});
        test::write_file(extra_ / "readme.txt", {1});
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.rowCount(), 1);
        QSignalSpy count(&lib, &ModelLibrary::countChanged);
        lib.setFolders({str(extra_), str(models_)});  // the models directory is never listed twice
        QCOMPARE(lib.folders(), QStringList{str(extra_)});
        QCOMPARE(lib.rowCount(), 2);
        QCOMPARE(count.count(), 1);
        QVERIFY(rowOf(lib, "b.gguf") >= 0);
        lib.setFolders({});
        QCOMPARE(lib.rowCount(), 1);
    }

    // A file written into a listed folder (a finished download) appears without a refresh.
    void picksUpNewFilesByItself() {
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.rowCount(), 0);
        test::writeGguf(models_ / "arrived.gguf", test::llamaHeader("arrived"));
        QTRY_COMPARE(lib.rowCount(), 1);
        QCOMPARE(field(lib, "arrived.gguf", ModelLibrary::NameRole).toString(), QString("arrived"));
    }

    void deleteCanBeUndone() {
        test::writeGguf(models_ / "keep.gguf", test::llamaHeader("keep"));
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.deleteWithUndo(str(models_ / "keep.gguf")), QString());
        QCOMPARE(lib.pendingDeletion(), QString("keep.gguf"));
        QCOMPARE(lib.rowCount(), 0);
        QVERIFY(std::filesystem::exists(models_ / "keep.gguf"));  // nothing deleted yet
        lib.undoDelete();
        QCOMPARE(lib.rowCount(), 1);
        QCOMPARE(lib.pendingDeletion(), QString());
        QVERIFY(std::filesystem::exists(models_ / "keep.gguf"));
    }

    void deleteHappensAfterTheUndoTimeOrTheNextDeletion() {
        test::writeGguf(models_ / "one.gguf", test::llamaHeader("one"));
        test::writeGguf(models_ / "two.gguf", test::llamaHeader("two"));
        ModelLibrary lib(str(models_));
        QCOMPARE(lib.deleteWithUndo(str(models_ / "one.gguf")), QString());
        QCOMPARE(lib.deleteWithUndo(str(models_ / "two.gguf")), QString());
        QVERIFY(!std::filesystem::exists(models_ / "one.gguf"));  // committed by the second
        QVERIFY(std::filesystem::exists(models_ / "two.gguf"));
        QTRY_VERIFY_WITH_TIMEOUT(!std::filesystem::exists(models_ / "two.gguf"), ModelLibrary::kUndoDeleteMs + 3000);
        QCOMPARE(lib.pendingDeletion(), QString());
        QCOMPARE(lib.rowCount(), 0);
    }

    void deleteRefusesWhatIsNotListed() {
        ModelLibrary lib(str(models_));
        test::write_file(extra_ / "elsewhere.gguf", {1});
        const QString problem = lib.deleteWithUndo(str(extra_ / "elsewhere.gguf"));
        QVERIFY2(problem.contains("is not in the library"), qPrintable(problem));
        QVERIFY(std::filesystem::exists(extra_ / "elsewhere.gguf"));
    }

    // Closing the app with a deletion pending carries it out (the user asked for it).
    void pendingDeletionIsCarriedOutOnClose() {
        test::writeGguf(models_ / "bye.gguf", test::llamaHeader("bye"));
        {
            ModelLibrary lib(str(models_));
            QCOMPARE(lib.deleteWithUndo(str(models_ / "bye.gguf")), QString());
        }
        QVERIFY(!std::filesystem::exists(models_ / "bye.gguf"));
    }

    void revealOpensTheFolder() {
        test::writeGguf(extra_ / "shown.gguf", test::llamaHeader("shown"));
        ModelLibrary lib(str(models_));
        UrlCatcher catcher;
        QDesktopServices::setUrlHandler("file", &catcher, "open");
        QVERIFY(lib.revealInFileManager(str(extra_ / "shown.gguf")));
        QDesktopServices::unsetUrlHandler("file");
        QCOMPARE(catcher.opened, QList<QUrl>{QUrl::fromLocalFile(str(extra_))});
    }

    // The fit estimate follows the KV type and the context chosen for the model: 3 layers x
    // KV dim 32 x 2 (K and V) = 192 elements per token.
    void fitFollowsKvTypeAndChosenContext() {
        const auto path = models_ / "ctx.gguf";
        test::writeGguf(path, test::llamaHeader("ctx", 4096));
        ModelLibrary lib(str(models_));
        const QString f = "ctx.gguf";
        QVERIFY(field(lib, f, ModelLibrary::FitTextRole).toString().contains("for 4096 tokens"));
        // f16: 192 x 4096 x 2 bytes = 1572864 bytes, shown as 1.6 MB.
        QVERIFY2(field(lib, f, ModelLibrary::FitTextRole).toString().contains("KV 1.6 MB"),
                 qPrintable(field(lib, f, ModelLibrary::FitTextRole).toString()));
        lib.setContextLengths({{str(path), 1024}});
        // 192 x 1024 x 2 = 393216 bytes.
        QVERIFY2(field(lib, f, ModelLibrary::FitTextRole).toString().contains("KV 393 KB for 1024 tokens"),
                 qPrintable(field(lib, f, ModelLibrary::FitTextRole).toString()));
        lib.setKvType("f32");  // 786432 bytes
        QVERIFY2(field(lib, f, ModelLibrary::FitTextRole).toString().contains("KV 786 KB"),
                 qPrintable(field(lib, f, ModelLibrary::FitTextRole).toString()));
    }
};

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");  // QDesktopServices needs a GUI application
    QGuiApplication app(argc, argv);
    TestModelLibrary test;
    return QTest::qExec(&test, argc, argv);
}
#include "test_model_library.moc"
