// arbor [--model PATH] [--database PATH]: the desktop chat app.
#include "main_window.h"

#include "arbor/store.h"

#include <QCommandLineParser>
#include <QGuiApplication>
#include <QIcon>

int main(int argc, char** argv) {
    arbor::app::prepareGui();
    QGuiApplication gui(argc, argv);
    QGuiApplication::setApplicationName(QStringLiteral("Arbor"));
    QGuiApplication::setApplicationVersion(QStringLiteral(ARBOR_VERSION));
    QGuiApplication::setDesktopFileName(QStringLiteral("arbor"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Chat with local GGUF models."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption model(QStringLiteral("model"), QStringLiteral("GGUF model to load for this run."),
                                   QStringLiteral("path"));
    const QCommandLineOption database(QStringLiteral("database"),
                                      QStringLiteral("SQLite database (default: %1).")
                                          .arg(QString::fromStdString(arbor::Store::default_path().string())),
                                      QStringLiteral("path"));
    parser.addOptions({model, database});
    parser.process(gui);

    const std::filesystem::path db = parser.isSet(database) ? std::filesystem::path(parser.value(database).toStdString())
                                                            : arbor::Store::default_path();
    arbor::app::ArborApp app(db);
    QQmlApplicationEngine engine;
    if (!arbor::app::loadMainWindow(engine, app)) return 1;
    app.start(parser.value(model));
    return gui.exec();
}
