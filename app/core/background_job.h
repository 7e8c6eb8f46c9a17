// Work for a pool thread (QThreadPool::globalInstance()), neither the GUI thread nor the
// store thread: tokenizing and templating a prompt. The answer comes back on the GUI
// thread, and is dropped when its receiver is gone by then.
#pragma once

#include <QCoreApplication>
#include <QMetaObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <exception>
#include <functional>
#include <utility>

namespace arbor::app {

// Runs job() on a pool thread, then done(result) on the application's thread (where
// `receiver` lives), or failed(message) when the job threw. What the job captures is
// released on the pool thread (a loaded model may be, as on the store thread); done and
// failed must capture nothing that may not be released on the application's thread.
template <class Job, class Done>
void runInBackground(QObject* receiver, Job job, Done done, std::function<void(const QString&)> failed) {
    QPointer<QObject> guard(receiver);
    QThreadPool::globalInstance()->start(
        [guard, job = std::move(job), done = std::move(done), failed = std::move(failed)]() mutable {
            // The guard is only read on the application's thread, where the receiver dies.
            QObject* app = QCoreApplication::instance();
            try {
                auto result = job();
                QMetaObject::invokeMethod(
                    app,
                    [guard, done = std::move(done), result = std::move(result)]() mutable {
                        if (guard) done(std::move(result));
                    },
                    Qt::QueuedConnection);
            } catch (const std::exception& e) {
                QMetaObject::invokeMethod(
                    app, [guard, failed, message = QString::fromUtf8(e.what())] { if (guard) failed(message); },
                    Qt::QueuedConnection);
            }
        });
}

} // namespace arbor::app
