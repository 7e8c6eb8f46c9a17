// Runs arbor-download-model (packaging/arbor-download-model; installed beside the app)
// for the app's "Download default model" button: a child process, so a slow or failed
// download never blocks the GUI thread and nothing half-written reaches the models
// directory (the script renames the file into place only once its checksum matched).
#pragma once

#include <QObject>
#include <QString>
#include <QtQml/qqmlregistration.h>

class QProcess;

namespace arbor::app {

class DefaultModelDownload : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(bool available READ available CONSTANT)  // the program was found
    Q_PROPERTY(bool running READ running NOTIFY changed)
    Q_PROPERTY(QString error READ error NOTIFY changed)  // the last attempt's, if it failed
public:
    // `program`: the download script; empty when there is none (the button is hidden).
    explicit DefaultModelDownload(QString program, QObject* parent = nullptr);
    ~DefaultModelDownload() override;  // stops a running download

    // arbor-download-model beside the running executable (the package installs both in
    // /usr/bin; a build copies it beside `arbor`), else on PATH; empty if neither.
    static QString findProgram();

    bool available() const { return !program_.isEmpty(); }
    bool running() const { return process_ != nullptr; }
    QString error() const { return error_; }

    // Starts the download unless one is running; succeeded() or changed() with an error
    // follows.
    Q_INVOKABLE void start();

signals:
    void changed();
    void succeeded();

private:
    void finish(bool ok, const QString& error);

    QString program_;
    QProcess* process_ = nullptr;
    QString error_;
};

} // namespace arbor::app
