// The arbor-server binary: refuses bad arguments with a message and a non-zero exit,
// serves on the port it prints, and stops cleanly on SIGTERM and SIGINT.
#include "http_test_client.h"
#include "test_support.h"

#include <QProcess>
#include <QRegularExpression>

#include <csignal>

class TestServerCli : public QObject {
    Q_OBJECT

    static QString binary() { return QStringLiteral(ARBOR_SERVER_PATH); }

private slots:
    void refusesBadArguments_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown option") << QStringList{"--bogus"} << 2 << "unknown option '--bogus'";
        QTest::newRow("port not a number") << QStringList{"--port", "eighty"} << 2 << "--port needs a whole number";
        QTest::newRow("port too large") << QStringList{"--port", "70000"} << 2 << "--port must be between 0 and 65535";
        QTest::newRow("missing value") << QStringList{"--model"} << 2 << "--model needs a value";
        QTest::newRow("threads negative") << QStringList{"--threads", "-1"} << 2 << "--threads must be between";
        QTest::newRow("kv too small") << QStringList{"--kv-mib", "1"} << 2 << "--kv-mib must be between";
        QTest::newRow("empty key") << QStringList{"--api-key", ""} << 2 << "--api-key needs a non-empty key";
        QTest::newRow("missing model file") << QStringList{"--model", "/nonexistent/model.gguf"} << 1 << "error:";
    }

    void refusesBadArguments() {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, message);
        QProcess p;
        p.start(binary(), args);
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), code);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains(message), qPrintable(err));
    }

    void missingDefaultModelSaysHowToInstallIt() {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("ARBOR_MODEL", "/nonexistent/default.gguf");
        p.setProcessEnvironment(env);
        p.start(binary(), {"--port", "0"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 1);
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("not found: /nonexistent/default.gguf") && err.contains("arbor-download-model"),
                 qPrintable(err));
    }

    void printsHelp() {
        QProcess p;
        p.start(binary(), {"--help"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY(out.contains("--port P") && out.contains("default 8080") && out.contains("127.0.0.1"));
    }

    void servesAndStopsOnSignals_data() {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGINT") << int(SIGINT);
    }

    void servesAndStopsOnSignals() {
        QFETCH(int, signal);
        ARBOR_REQUIRE_MODEL();
        QProcess p;
        p.start(binary(), {"--model", QString::fromStdString(arbor::test::model_path().string()), "--port", "0",
                           "--threads", "2", "--kv-mib", "64"});
        QVERIFY(p.waitForStarted());
        QString line;
        while (!line.contains('\n') && p.waitForReadyRead(60000)) line += QString::fromUtf8(p.readAllStandardOutput());
        const auto m = QRegularExpression("serving (\\S+) on http://127\\.0\\.0\\.1:(\\d+)").match(line);
        QVERIFY2(m.hasMatch(), qPrintable(line + QString::fromUtf8(p.readAllStandardError())));
        QCOMPARE(m.captured(1), QString("SmolLM2-135M-Instruct.Q4_1"));
        const uint16_t port = uint16_t(m.captured(2).toUInt());
        auto r = arbor::test::http_request(port, "GET", "/v1/models");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->body.find("SmolLM2-135M-Instruct.Q4_1") != std::string::npos);
        // A client mid-request when the signal comes does not hold the shutdown up.
        arbor::test::HttpTestClient busy(port);
        QVERIFY(busy.send_request("POST", "/v1/completions",
                                  "{\"model\":\"SmolLM2-135M-Instruct.Q4_1\",\"prompt\":\"1, 2, 3,\",\"max_tokens\":3000,"
                                  "\"temperature\":0,\"stream\":true}"));
        QVERIFY(busy.read_head());
        ::kill(pid_t(p.processId()), signal);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("shutting down"));
    }
};

QTEST_GUILESS_MAIN(TestServerCli)
#include "test_server_cli.moc"
