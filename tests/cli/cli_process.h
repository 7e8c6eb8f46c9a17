// Runs the real arbor-cli binary (ARBOR_CLI_PATH, set by the suite's CMake target) with
// arguments and standard input, for the command-line suites.
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

namespace arbor::test {

struct CliRun {
    int exit_code = -1;  // -1 when it did not start or did not exit normally
    QString out, err;
};

inline CliRun run_cli(const QStringList& args, const QByteArray& input = {}) {
    QProcess p;
    p.start(QStringLiteral(ARBOR_CLI_PATH), args);
    if (!p.waitForStarted()) return {};
    p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(180000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

} // namespace arbor::test
