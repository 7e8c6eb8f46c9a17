#include "main_window.h"

#include <QQuickStyle>
#include <QtQml/QQmlExtensionPlugin>

Q_IMPORT_QML_PLUGIN(Arbor_CorePlugin)
Q_IMPORT_QML_PLUGIN(Arbor_UiPlugin)

namespace arbor::app {

void prepareGui() {
    QQuickStyle::setStyle(QStringLiteral("Material"));
}

QQuickWindow* loadMainWindow(QQmlApplicationEngine& engine, ArborApp& app) {
    engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
    engine.setInitialProperties({{QStringLiteral("app"), QVariant::fromValue(&app)}});
    engine.load(QUrl(QStringLiteral("qrc:/qt/qml/Arbor/Ui/Main.qml")));
    if (engine.rootObjects().isEmpty()) return nullptr;
    return qobject_cast<QQuickWindow*>(engine.rootObjects().front());
}

} // namespace arbor::app
