// The arbor-server binary: refuses bad arguments with a message and a non-zero exit,
// serves on the port it prints, and stops cleanly on SIGTERM and SIGINT.
#include "http_test_client.h"
#include "test_support.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <sys/stat.h>
#include <vector>

class TestServerCli : public QObject {
    Q_OBJECT

    static QString binary() { return QStringLiteral(ARBOR_SERVER_PATH); }

    // Starts arbor-server on the default model and a free port; returns the port it
    // printed, 0 when it did not come up. Its KV disk tier starts empty (a directory of
    // its own) unless extra_args name one. `serving`: the line it printed.
    static uint16_t start_server(QProcess& p, const QStringList& extra_args = {}, QString* serving = nullptr) {
        static std::vector<std::unique_ptr<QTemporaryDir>> disk_dirs;
        QStringList args{"--model", QString::fromStdString(arbor::test::model_path().string()), "--port", "0",
                         "--threads", "2", "--kv-mib", "64"};
        if (!extra_args.contains("--kv-disk-dir")) {
            disk_dirs.push_back(std::make_unique<QTemporaryDir>());
            args << "--kv-disk-dir" << disk_dirs.back()->path();
        }
        p.start(binary(), args + extra_args);
        if (!p.waitForStarted()) return 0;
        QString line;
        while (!line.contains('\n') && p.waitForReadyRead(60000)) line += QString::fromUtf8(p.readAllStandardOutput());
        const auto m = QRegularExpression("serving SmolLM2-135M-Instruct.Q4_1 on http://127\\.0\\.0\\.1:(\\d+)").match(line);
        if (!m.hasMatch()) qWarning("arbor-server did not start: %s", qPrintable(line + p.readAllStandardError()));
        if (serving) *serving = line;
        return m.hasMatch() ? uint16_t(m.captured(1).toUInt()) : 0;
    }

    // Status of GET /v1/models with an optional bearer token.
    static int models_status(uint16_t port, const std::string& token = {}) {
        std::vector<std::string> headers;
        if (!token.empty()) headers.push_back("Authorization: Bearer " + token);
        const auto r = arbor::test::http_request(port, "GET", "/v1/models", {}, headers);
        return r ? r->status : 0;
    }

    static bool stop(QProcess& p) {
        ::kill(pid_t(p.processId()), SIGTERM);
        return p.waitForFinished(10000) && p.exitCode() == 0;
    }

    // cached_tokens of a one-token completion of `prompt` sent with a bearer token.
    static int64_t cached_tokens(uint16_t port, const std::string& token, const std::string& prompt) {
        const std::string body = "{\"model\":\"SmolLM2-135M-Instruct.Q4_1\",\"prompt\":\"" + prompt +
                                 "\",\"max_tokens\":1,\"temperature\":0}";
        const auto r = arbor::test::http_request(port, "POST", "/v1/completions", body,
                                                 {"Content-Type: application/json", "Authorization: Bearer " + token});
        if (!r || r->status != 200) return -1;
        const auto m = QRegularExpression("\"cached_tokens\":(\\d+)").match(QString::fromStdString(r->body));
        return m.hasMatch() ? m.captured(1).toLongLong() : -1;
    }

    QTemporaryDir dir_;

    std::string write_key_file(const char* name, const std::string& content, mode_t mode) {
        const std::string path = dir_.path().toStdString() + "/" + name;
        std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
        ::chmod(path.c_str(), mode);
        return path;
    }

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
        QTest::newRow("unknown KV type") << QStringList{"--kv-type", "q4_0"} << 2 << "--kv-type must be f16, f32 or q8_0";
        QTest::newRow("kv too small") << QStringList{"--kv-mib", "1"} << 2 << "--kv-mib must be between";
        QTest::newRow("empty key") << QStringList{"--api-key", ""} << 2 << "--api-key needs a non-empty key";
        QTest::newRow("allowed host with a port") << QStringList{"--allowed-hosts", "a.example:8080"} << 2
                                                  << "--allowed-hosts needs host names or IP addresses without ports";
        QTest::newRow("empty allowed host") << QStringList{"--allowed-hosts", "a.example,,b.example"} << 2
                                            << "--allowed-hosts needs host names";
        QTest::newRow("missing key file") << QStringList{"--api-key-file", "/nonexistent/key"} << 2
                                          << "--api-key-file: cannot read '/nonexistent/key'";
        QTest::newRow("empty key file") << QStringList{"--api-key-file", "/dev/null"} << 2 << "holds no key";
        QTest::newRow("key and key file")
            << QStringList{"--api-key", "k", "--api-key-file", QString::fromStdString(write_key_file("k", "k\n", 0600))} << 2
            << "--api-key and --api-key-file exclude each other";
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

    // What the user should know about the model is printed at load: here a model file
    // without a chat template.
    void warnsAboutTheModelAtLoad() {
        QTemporaryDir disk;
        const auto tiny = arbor::test::test_data_dir() / "synthetic" / "qwen2-tiny.gguf";
        QProcess p;
        p.start(binary(), {"--model", QString::fromStdString(tiny.string()), "--port", "0", "--threads", "1",
                           "--kv-mib", "16", "--kv-disk-dir", disk.path()});
        QVERIFY(p.waitForStarted());
        QString out;
        while (!out.contains("serving") && p.waitForReadyRead(60000)) out += QString::fromUtf8(p.readAllStandardOutput());
        QVERIFY2(out.contains("serving qwen2-tiny on"), qPrintable(out));
        QVERIFY(stop(p));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(err.count("arbor-server: warning: the model file has no chat template, so Arbor uses the ChatML "
                           "format\n"),
                 1);
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
        const uint16_t port = start_server(p);
        QVERIFY(port != 0);
        auto r = arbor::test::http_request(port, "GET", "/v1/models");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->body.find("SmolLM2-135M-Instruct.Q4_1") != std::string::npos);
        // A stream open when the signal comes ends with an error event and [DONE] within
        // 2 s, and does not hold the shutdown up.
        arbor::test::HttpTestClient busy(port);
        QVERIFY(busy.send_request("POST", "/v1/completions",
                                  "{\"model\":\"SmolLM2-135M-Instruct.Q4_1\",\"prompt\":\"1, 2, 3,\",\"max_tokens\":3000,"
                                  "\"temperature\":0,\"stream\":true}",
                                  {"Content-Type: application/json"}));
        QVERIFY(busy.read_head());
        const auto signalled = std::chrono::steady_clock::now();
        ::kill(pid_t(p.processId()), signal);
        const auto rest = busy.read_chunked_body();
        const auto ended = std::chrono::steady_clock::now();
        QVERIFY2(rest, "the stream was cut off");
        const auto events = arbor::test::sse_payloads(*rest);
        QVERIFY(events.size() >= 2);
        QCOMPARE(events.back(), std::string("[DONE]"));
        const std::string& last = events[events.size() - 2];
        QVERIFY2(last.find("\"error\"") != std::string::npos && last.find("shutting down") != std::string::npos,
                 last.c_str());
        QVERIFY(ended - signalled < std::chrono::seconds(2));
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("shutting down"));
    }

    // --int8-activations reaches the backend, which the serving line names, and it answers.
    void servesWithInt8Activations() {
        ARBOR_REQUIRE_MODEL();
        QProcess p;
        QString serving;
        const uint16_t port = start_server(p, {"--int8-activations"}, &serving);
        QVERIFY(port != 0);
        QVERIFY2(serving.contains("int8 activations"), qPrintable(serving));
        const auto r = arbor::test::http_request(
            port, "POST", "/v1/completions",
            "{\"model\":\"SmolLM2-135M-Instruct.Q4_1\",\"prompt\":\"1, 2, 3,\",\"max_tokens\":4,\"temperature\":0}",
            {"Content-Type: application/json"});
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY2(r->body.find("\"completion_tokens\":4") != std::string::npos, r->body.c_str());
        QVERIFY(stop(p));
    }

    // The key from a file (its first line, blanks trimmed) or from ARBOR_API_KEY, without a
    // warning; given with --api-key it works too but the server warns that ps shows it.
    void takesTheKeyFromAFileOrTheEnvironment_data() {
        QTest::addColumn<QString>("how");
        QTest::newRow("file") << "file";
        QTest::newRow("environment") << "environment";
        QTest::newRow("command line") << "command line";
    }
    void takesTheKeyFromAFileOrTheEnvironment() {
        QFETCH(QString, how);
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        const std::string key = "k3y-from-" + how.toStdString().substr(0, 4);
        QStringList args;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("ARBOR_API_KEY");
        if (how == "file") args = {"--api-key-file", QString::fromStdString(write_key_file("key", "  " + key + " \nsecond line\n", 0600))};
        else if (how == "environment") env.insert("ARBOR_API_KEY", QString::fromStdString(key));
        else args = {"--api-key", QString::fromStdString(key)};
        p.setProcessEnvironment(env);
        const uint16_t port = start_server(p, args);
        QVERIFY(port != 0);
        QCOMPARE(models_status(port), 401);
        QCOMPARE(models_status(port, key + "x"), 401);
        QCOMPARE(models_status(port, key), 200);
        QVERIFY(stop(p));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        const bool warned = err.contains("warning: --api-key shows the key to every user of this machine (ps)");
        QVERIFY2(warned == (how == "command line"), qPrintable(err));
    }

    void warnsAboutAKeyFileOthersCanRead() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        QProcess p;
        const std::string path = write_key_file("open-key", "open-secret\n", 0644);
        const uint16_t port = start_server(p, {"--api-key-file", QString::fromStdString(path)});
        QVERIFY(port != 0);
        QCOMPARE(models_status(port, "open-secret"), 200);
        QVERIFY(stop(p));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QVERIFY2(err.contains("is readable by other users"), qPrintable(err));
    }

    // Clients with different bearer tokens (no key required) do not see each other's
    // cached prompts, unless --share-cache.
    void shareCacheJoinsTheNamespaces_data() {
        QTest::addColumn<bool>("share");
        QTest::newRow("default") << false;
        QTest::newRow("--share-cache") << true;
    }
    void shareCacheJoinsTheNamespaces() {
        QFETCH(bool, share);
        ARBOR_REQUIRE_MODEL();
        QProcess p;
        const uint16_t port = start_server(p, share ? QStringList{"--share-cache"} : QStringList{});
        QVERIFY(port != 0);
        const std::string prompt = "Remember that my locker combination is 31-17-5 and my badge number is 88231.";
        QCOMPARE(cached_tokens(port, "alice", prompt), int64_t(0));
        const int64_t seen = cached_tokens(port, "mallory", prompt);
        QVERIFY2(share ? seen > 0 : seen == 0, qPrintable(QString::number(seen)));
        QVERIFY(cached_tokens(port, "alice", prompt) > 0);
        QVERIFY(stop(p));
    }

    // The disk tier keeps what a stopped server computed, and the next one reports the
    // tokens it restores as cached: a client's own namespace outlives the server, since
    // its key is kept in the cache directory, and another client still learns nothing.
    // A key file that is not a key is replaced with a warning: the earlier pages are then
    // out of every client's reach.
    void restartedServerReadsTheDiskTier_data() {
        QTest::addColumn<QString>("key_file");
        QTest::newRow("key kept") << "kept";
        QTest::newRow("key file corrupted") << "corrupted";
    }
    void restartedServerReadsTheDiskTier() {
        QFETCH(QString, key_file);
        ARBOR_REQUIRE_MODEL();
        QTemporaryDir disk, cache_home;
        const QStringList args{"--kv-disk-dir", disk.path()};
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("XDG_CACHE_HOME", cache_home.path());
        std::string prompt = "Minutes of the harbour committee.";
        for (int i = 0; i < 8; ++i) prompt += " Item " + std::to_string(i + 1) + ": the ferry timetable for the winter months.";
        {
            QProcess p;
            p.setProcessEnvironment(env);
            const uint16_t port = start_server(p, args);
            QVERIFY(port != 0);
            QCOMPARE(cached_tokens(port, "alice", prompt), int64_t(0));
            QVERIFY(stop(p));
        }
        const std::string key_path = cache_home.path().toStdString() + "/arbor/api-namespace-key";
        struct stat st{};
        QCOMPARE(::stat(key_path.c_str(), &st), 0);
        QCOMPARE(st.st_mode & 0777, mode_t(0600));
        if (key_file == "corrupted") std::ofstream(key_path, std::ios::trunc) << "garbage\n";
        QProcess p;
        p.setProcessEnvironment(env);
        const uint16_t port = start_server(p, args);
        QVERIFY(port != 0);
        QCOMPARE(cached_tokens(port, "mallory", prompt), int64_t(0));
        const int64_t restored = cached_tokens(port, "alice", prompt);
        if (key_file == "kept") QVERIFY2(restored >= 64, qPrintable(QString::number(restored)));
        else QCOMPARE(restored, int64_t(0));
        QVERIFY(stop(p));
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(err.contains("a new key replaces it"), key_file == "corrupted");
    }

    void answersAllowedHosts() {
        ARBOR_REQUIRE_MODEL();
        QProcess p;
        const uint16_t port = start_server(p, {"--allowed-hosts", "my.example, Other.Example", "--allowed-hosts", "fe80::1"});
        QVERIFY(port != 0);
        const auto status_for = [port](const std::string& host) {
            arbor::test::HttpTestClient c(port);
            c.send_raw("GET /v1/models HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
            const auto r = c.read_response();
            return r ? r->status : 0;
        };
        QCOMPARE(status_for("my.example:" + std::to_string(port)), 200);
        QCOMPARE(status_for("other.example"), 200);
        QCOMPARE(status_for("[fe80::1]"), 200);
        QCOMPARE(status_for("localhost"), 200);
        QCOMPARE(status_for("evil.example"), 421);
        ::kill(pid_t(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitCode(), 0);
    }
};

QTEST_GUILESS_MAIN(TestServerCli)
#include "test_server_cli.moc"
