// Loads Main.qml for an ArborApp: the Material style, the static QML modules, the
// window. Shared by main() and the end-to-end test so both show the same window.
#pragma once

#include "arbor_app.h"

#include <QQmlApplicationEngine>
#include <QQuickWindow>

namespace arbor::app {

// Call before the QGuiApplication exists (style and graphics settings).
void prepareGui();

// Loads the main window into `engine` with `app` as its `app` property; null (with
// the QML errors logged) when it cannot be loaded.
QQuickWindow* loadMainWindow(QQmlApplicationEngine& engine, ArborApp& app);

} // namespace arbor::app
