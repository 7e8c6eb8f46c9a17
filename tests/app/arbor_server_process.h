// The real arbor-server binary (ARBOR_SERVER_PATH, from the build) as a remote for the
// app's tests: started on the default model, a free loopback port and an API key.
#pragma once

#include "test_support.h"

#include <QProcess>
#include <QRegularExpression>

#include <csignal>

namespace arbor::test {

// Starts it in `p` with `apiKey` required and its KV disk tier in `kvDiskDir`; returns the
// port it printed, 0 when it did not come up (with why as a warning).
inline quint16 startArborServer(QProcess& p, const QString& apiKey, const QString& kvDiskDir) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("ARBOR_API_KEY"), apiKey);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(ARBOR_SERVER_PATH), {"--model", QString::fromStdString(model_path().string()), "--port", "0",
                                                "--threads", "2", "--kv-mib", "64", "--kv-disk-dir", kvDiskDir});
    if (!p.waitForStarted()) return 0;
    QString line;
    while (!line.contains('\n') && p.waitForReadyRead(60000)) line += QString::fromUtf8(p.readAllStandardOutput());
    const auto m = QRegularExpression("on http://127\\.0\\.0\\.1:(\\d+)").match(line);
    if (!m.hasMatch()) qWarning("arbor-server did not start: %s", qPrintable(line + p.readAllStandardError()));
    return m.hasMatch() ? quint16(m.captured(1).toUInt()) : 0;
}

// Stops it with SIGTERM; true when it exited.
inline bool stopArborServer(QProcess& p) {
    if (p.state() == QProcess::NotRunning) return true;
    ::kill(pid_t(p.processId()), SIGTERM);
    return p.waitForFinished(10000);
}

} // namespace arbor::test
