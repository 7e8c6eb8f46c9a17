// Helpers for the tests that drive the real window (offscreen): finding items in the
// visual tree, the app over a fresh database, typing into the composer, and watching
// that the GUI thread stays responsive.
#pragma once

#include "main_window.h"
#include "test_support.h"

#include <QElapsedTimer>
#include <QGuiApplication>
#include <QTest>
#include <QQuickItem>
#include <QStringList>
#include <QTemporaryDir>
#include <QTimer>

namespace arbor::test {

// Every item named `objectName` below `item` (delegates of views have a parent item but
// no QObject parent, so this walks the visual tree).
QList<QQuickItem*> itemsNamed(QQuickItem* item, const QString& objectName);
QQuickItem* findItem(QQuickWindow* window, const QString& objectName);
QList<QQuickItem*> visibleItems(QQuickWindow* window, const QString& objectName);

// The real window over the database `db` (not started yet).
struct AppWindow {
    explicit AppWindow(const std::filesystem::path& db) : app(db), window(app::loadMainWindow(engine, app)) {}
    app::ArborApp app;
    QQmlApplicationEngine engine;
    QQuickWindow* window;
};

struct TemporaryDatabase {
    QTemporaryDir dir;
    std::filesystem::path path() const { return std::filesystem::path(dir.path().toStdString()) / "arbor.db"; }
};

// The real window over a fresh database.
struct FreshApp : TemporaryDatabase, AppWindow {
    FreshApp() : AppWindow(TemporaryDatabase::path()) {}
};

// Shows the window (at `size` when given), starts the app with the default model and
// waits until it is ready.
void startWithModel(AppWindow& fresh, QSize size = {});

// Types a message into the focused composer and presses Enter.
void typeAndSend(QQuickWindow* window, const QString& text);

// Clicks the middle of an item, scrolled into view first.
void click(QQuickWindow* window, QQuickItem* item);

// Clicks a text field, selects all its text and types `text` over it (ASCII only).
void replaceText(QQuickWindow* window, QQuickItem* field, const QString& text);

// How long the GUI thread went without running its event loop since the last reset():
// a timer ticks every 20 ms, and the time between two ticks is time the thread spent
// elsewhere (a layout, a render). Measured in the thread's own CPU time, which does not
// count waiting for a busy machine's cores, and in wall-clock time for the report. A
// responsiveness check, not a speed measure.
class GuiStallMeter {
public:
    GuiStallMeter();
    void reset();
    qint64 longestBusyMs() const;  // the thread's CPU time between two ticks
    qint64 longestGapMs() const;   // wall-clock time between two ticks
    QString describe() const;

private:
    void tick();

    QTimer timer_;
    QElapsedTimer clock_;
    qint64 lastTick_ = 0, lastCpuNs_ = 0;
    qint64 longestGap_ = 0, longestBusyNs_ = 0;
};

// Records Qt's warnings of layouts that do not settle ("possible QQuickItem::polish()
// loop", "Binding loop detected") while it exists.
class LayoutLoopWatch {
public:
    LayoutLoopWatch();
    ~LayoutLoopWatch();
    LayoutLoopWatch(const LayoutLoopWatch&) = delete;
    LayoutLoopWatch& operator=(const LayoutLoopWatch&) = delete;
    QStringList warnings() const;
};

// main() of a suite of window tests: the offscreen platform (or the one named by
// ARBOR_TEST_PLATFORM, e.g. xcb under Xvfb, whose key mapping differs) and the software
// renderer (no display, GPU or GL needed to render and grab), the app's style, a KV disk
// tier of its own, then the tests.
template <class Tests>
int runWindowTests(int argc, char** argv) {
    const QByteArray platform = qgetenv("ARBOR_TEST_PLATFORM");
    qputenv("QT_QPA_PLATFORM", platform.isEmpty() ? QByteArray("offscreen") : platform);
    qputenv("QT_QUICK_BACKEND", "software");
    app::prepareGui();
    QGuiApplication gui(argc, argv);
    const PrivateCacheHome cache;  // the app's KV disk tier starts empty
    Tests tests;
    return QTest::qExec(&tests, argc, argv);
}

} // namespace arbor::test
