// arbor-cli end to end: the real binary on the default model, through QProcess.
#include "cli_process.h"
#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>

namespace {

using Run = arbor::test::CliRun;
using arbor::test::run_cli;

QString model() { return QString::fromStdString(arbor::test::model_path().string()); }

QJsonArray last_line_array(const QString& out) {
    const auto lines = out.trimmed().split('\n');
    return QJsonDocument::fromJson(lines.last().toUtf8()).array();
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { ARBOR_REQUIRE_MODEL(); }

    void generateStreamsTextIdsAndStats() {
        const Run r = run_cli({"generate", "--model", model(), "--prompt", "The capital of France is", "-n", "8",
                               "--temp", "0", "--ids"});
        QCOMPARE(r.exit_code, 0);
        const QJsonArray ids = last_line_array(r.out);
        QCOMPARE(ids.size(), 8);
        QVERIFY(r.out.contains("Paris"));
        QVERIFY2(r.err.contains("prompt tokens: 5") && r.err.contains("prefill:") && r.err.contains("decode:"),
                 qPrintable(r.err));
    }

    // The KV element type asked for is the one the backend keeps (as it reports it).
    void generateKeepsTheKvTypeAskedFor() {
        for (const QString type : {"q8_0", "f32"}) {
            const Run r = run_cli({"generate", "--model", model(), "--prompt", "The capital of France is", "-n", "4",
                                   "--temp", "0", "--kv-type", type, "--ids"});
            QCOMPARE(r.exit_code, 0);
            QCOMPARE(last_line_array(r.out).size(), 4);
            QVERIFY2(r.err.contains("KV cache: " + type), qPrintable(r.err));
        }
    }

    // --int8-activations reaches the backend (which names it) and generates.
    void generateTakesInt8Activations() {
        const QStringList args = {"generate", "--model", model(), "--prompt", "The capital of France is", "-n", "4",
                                  "--temp", "0", "--ids"};
        const Run plain = run_cli(args), int8 = run_cli(args + QStringList{"--int8-activations"});
        QCOMPARE(plain.exit_code, 0);
        QCOMPARE(int8.exit_code, 0);
        QCOMPARE(last_line_array(int8.out).size(), 4);
        QVERIFY2(int8.err.contains("int8 activations"), qPrintable(int8.err));
        QVERIFY2(plain.err.contains("on CPU (") && !plain.err.contains("int8"), qPrintable(plain.err));
    }

    void generateIsReproducibleWithASeed() {
        const QStringList args = {"generate", "--model", model(), "--prompt", "Once upon a time", "-n", "12",
                                  "--temp", "1.0", "--top-k", "50", "--top-p", "0.9", "--seed", "7", "--ids"};
        const Run a = run_cli(args), b = run_cli(args);
        QCOMPARE(a.exit_code, 0);
        QCOMPARE(last_line_array(a.out), last_line_array(b.out));
        QStringList other = args;
        other[other.indexOf("7")] = "8";
        QVERIFY(last_line_array(run_cli(other).out) != last_line_array(a.out));
    }

    void tokenizeReadsStandardInput() {
        const Run r = run_cli({"tokenize", "--model", model()}, "<|im_start|>user\nHello");
        QCOMPARE(r.exit_code, 0);
        const QJsonArray ids = QJsonDocument::fromJson(r.out.toUtf8()).array();
        QVERIFY(ids.size() >= 3);
        QCOMPARE(ids.first().toInt(), 1);  // <|im_start|> of SmolLM2's vocabulary
        const Run plain = run_cli({"tokenize", "--model", model(), "--no-special"}, "<|im_start|>");
        QVERIFY(QJsonDocument::fromJson(plain.out.toUtf8()).array().size() > 1);
    }

    void chatKeepsTheConversationAndReusesItsKv() {
        const Run r = run_cli({"chat", "--model", model(), "--temp", "0", "-n", "24"},
                              "What is 2 plus 2?\nAnd what is 3 plus 3?\n");
        QCOMPARE(r.exit_code, 0);
        QVERIFY(!r.out.trimmed().isEmpty());
        // Second turn: its prompt starts with the whole first turn, which is cached.
        const auto stats = r.err.split('\n').filter("cached");
        QCOMPARE(stats.size(), 2);
        const QRegularExpression re(R"(\[(\d+) prompt tokens, (\d+) cached)");
        const auto first = re.match(stats[0]), second = re.match(stats[1]);
        QVERIFY(first.hasMatch() && second.hasMatch());
        QCOMPARE(first.captured(2).toInt(), 0);
        QVERIFY(second.captured(2).toInt() > first.captured(1).toInt());
        QVERIFY2(!r.err.contains("warning"), qPrintable(r.err));  // the model's own template is used
    }

    // A model without a chat template: chat says which format it uses instead, once.
    void chatWarnsWhenTheModelHasNoTemplate() {
        const auto tiny = arbor::test::test_data_dir() / "synthetic" / "qwen2-tiny.gguf";
        const Run r = run_cli({"chat", "--model", QString::fromStdString(tiny.string()), "--temp", "0", "-n", "2"},
                              "Hi\nAgain\n");
        QCOMPARE(r.exit_code, 0);
        QCOMPARE(r.err.count("arbor-cli: warning: the model file has no chat template, so Arbor uses the ChatML format\n"),
                 1);
    }

    void badInputFailsClearly_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no command") << QStringList{} << "usage";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command";
        QTest::newRow("unknown option") << QStringList{"generate", "--prompt", "x", "--bogus"} << "unknown argument";
        QTest::newRow("missing prompt") << QStringList{"generate", "--model", model()} << "--prompt";
        QTest::newRow("bad number") << QStringList{"generate", "--prompt", "x", "-n", "ten"} << "expects an integer";
        QTest::newRow("missing value") << QStringList{"generate", "--prompt"} << "needs a value";
        QTest::newRow("unknown KV type") << QStringList{"generate", "--model", model(), "--prompt", "x", "--kv-type", "q4_0"}
                                         << "--kv-type expects f16, f32 or q8_0, not 'q4_0'";
        QTest::newRow("missing model") << QStringList{"generate", "--model", "/nonexistent/m.gguf", "--prompt", "x"}
                                       << "not found";
        QTest::newRow("missing prompt file") << QStringList{"generate", "--prompt-file", "/nonexistent/p.txt"}
                                             << "cannot read prompt file";
    }
    void badInputFailsClearly() {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = run_cli(args);
        QVERIFY2(r.exit_code > 0, qPrintable(QString("exit code %1").arg(r.exit_code)));
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
    }

    void missingDefaultModelSaysHowToInstallIt() {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("ARBOR_MODEL", "/nonexistent/default.gguf");
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(ARBOR_CLI_PATH), {"generate", "--prompt", "x"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 1);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("not found: /nonexistent/default.gguf") && err.contains("arbor-download-model"),
                 qPrintable(err));
    }

    void notAModelFileFailsClearly() {
        QTemporaryFile f;
        QVERIFY(f.open());
        f.write("this is not a gguf file at all, just some text");
        f.flush();
        const Run r = run_cli({"generate", "--model", f.fileName(), "--prompt", "x"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("error:"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
