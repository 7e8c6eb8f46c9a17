#include <QGuiApplication>
#include <QQmlApplicationEngine>
#include <QtQml/QQmlExtensionPlugin>

Q_IMPORT_QML_PLUGIN(Arbor_CorePlugin)
Q_IMPORT_QML_PLUGIN(Arbor_UiPlugin)

int main(int argc, char** argv) {
    QGuiApplication app(argc, argv);
    QQmlApplicationEngine engine;
    engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
    engine.load(QUrl(QStringLiteral("qrc:/qt/qml/Arbor/Ui/Main.qml")));
    if (engine.rootObjects().isEmpty()) return 1;
    return app.exec();
}
