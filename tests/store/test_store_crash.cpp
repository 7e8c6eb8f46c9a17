// A process streaming a reply is killed with SIGKILL; the database must be intact and
// the partial reply kept (marked stopped) when it is opened again.
#include "arbor/store.h"
#include "raw_db.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

std::string expected_text(std::size_t pieces) {
    std::string text;
    for (std::size_t i = 0; i < pieces; ++i) text += "w" + std::to_string(i) + " ";
    return text;
}

} // namespace

class TestStoreCrash : public QObject {
    Q_OBJECT

private slots:
    void killedWriterLosesOnlyTheLastMoment() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::filesystem::path file = std::filesystem::path(dir.path().toStdString()) / "arbor.db";
        std::vector<arbor::MessageId> replies;

        // Each round kills a new writer at a different point of its stream.
        for (int round = 0; round < 3; ++round) {
            QProcess writer;
            writer.start(QStringLiteral(ARBOR_STREAM_WRITER), {QString::fromStdString(file.string())});
            QVERIFY2(writer.waitForStarted(10000), qPrintable(writer.errorString()));
            const int target = 20 + round * 150;
            int appended = 0;
            arbor::MessageId reply = 0;
            QElapsedTimer timer;
            timer.start();
            while (appended < target && timer.elapsed() < 30000) {
                if (!writer.canReadLine() && !writer.waitForReadyRead(1000)) {
                    QVERIFY2(writer.state() == QProcess::Running, writer.readAllStandardError().constData());
                    continue;
                }
                while (writer.canReadLine()) {
                    const QByteArray line = writer.readLine().trimmed();
                    if (line.startsWith("reply ")) reply = line.mid(6).toLongLong();
                    else if (line.startsWith("appended ")) appended = line.mid(9).toInt();
                }
            }
            QVERIFY2(appended >= target, "the writer did not stream in time");
            writer.kill();  // SIGKILL, mid-stream
            QVERIFY(writer.waitForFinished(10000));
            QCOMPARE(writer.exitStatus(), QProcess::CrashExit);
            QVERIFY(reply > 0);
            replies.push_back(reply);

            QCOMPARE(arbor::test::raw_quick_check(file), std::string("ok"));
            arbor::Store store(file);
            QVERIFY(store.open_report().problem.empty());
            QCOMPARE(store.open_report().interrupted_replies, 1);
            QCOMPARE(store.list_conversations().size(), std::size_t(round + 1));
            for (const arbor::MessageId id : replies) {
                const arbor::Message m = store.message(id);
                QCOMPARE(m.state, arbor::MessageState::stopped);
                QCOMPARE(m.role, arbor::Role::Assistant);
                QVERIFY(!m.token_ids.empty());
                if (id == reply) QVERIFY(m.token_ids.size() >= std::size_t(appended));
                // Text and ids come from the same appends: nothing half-written.
                QCOMPARE(m.text, expected_text(m.token_ids.size()));
                for (std::size_t i = 0; i < m.token_ids.size(); ++i)
                    QCOMPARE(m.token_ids[i], std::int32_t(i));
                const auto path = store.path(id);
                QCOMPARE(path.size(), std::size_t(2));
                QCOMPARE(path[0].text, std::string("prompt"));
                QCOMPARE(path[0].token_ids, (std::vector<std::int32_t>{-7, 8}));
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestStoreCrash)
#include "test_store_crash.moc"
