// The Device setting in the real window (offscreen) with the default model, on a machine
// where no GPU can be used (checked first; skipped where one can): a GPU chosen on an
// earlier run (cuda:0) runs the model on the CPU, and the status line and the Model
// settings page say why; the page lists automatic, the CPU and the chosen GPU as not
// found, with the reason no GPU is listed; the CPU chosen in the box and the model
// reloaded, the reason is gone. Screenshots of the page in both themes go to the build
// directory.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/cuda_devices.h"
#include "arbor/store.h"

#include <QtTest>

using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

class TestDeviceSetting : public QObject {
    Q_OBJECT
private slots:
    void gpuChosenWithoutOneRunsOnTheCpuAndSaysWhy();
};

void TestDeviceSetting::gpuChosenWithoutOneRunsOnTheCpuAndSaysWhy() {
    ARBOR_REQUIRE_MODEL();
    const arbor::CudaDevices found = arbor::find_cuda_devices();
    if (!found.devices.empty()) QSKIP("a CUDA device is present: the model would run on it");
    const QString reason = QString::fromStdString(found.none_reason);
    QVERIFY(!reason.isEmpty());

    arbor::test::TemporaryDatabase db;
    arbor::Store(db.path()).set_app_setting("engine.device", "cuda:0");
    arbor::test::AppWindow running(db.path());
    arbor::test::startWithModel(running, QSize(1100, 760));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = running.window;
    QCOMPARE(running.app.settings()->device(), QString("cuda:0"));
    QVERIFY2(running.app.model()->device().startsWith("CPU ("), qPrintable(running.app.model()->device()));

    QQuickItem* fallback = findItem(window, QStringLiteral("statusDeviceFallback"));
    QVERIFY(fallback);
    QTRY_VERIFY(fallback->isVisible());
    QCOMPARE(fallback->property("text").toString(), QStringLiteral("GPU not used: ") + reason);

    QObject* settings = running.engine.rootObjects().front()->findChild<QObject*>(QStringLiteral("settingsDialog"));
    QVERIFY(settings);
    QMetaObject::invokeMethod(settings, "open");
    QTRY_VERIFY(settings->property("opened").toBool());
    settings->setProperty("currentPage", 0);
    QTRY_COMPARE(visibleItems(window, QStringLiteral("deviceBox")).size(), 1);
    QQuickItem* box = visibleItems(window, QStringLiteral("deviceBox")).front();
    QQuickItem* hint = findItem(window, QStringLiteral("deviceHint"));
    QTRY_COMPARE_WITH_TIMEOUT(hint->property("text").toString(),
                              QStringLiteral("No GPU: %1. The model runs on the CPU.").arg(reason), 20000);
    QCOMPARE(box->property("count").toInt(), 3);
    QCOMPARE(box->property("currentText").toString(), QStringLiteral("GPU 0 (not found)"));
    QQuickItem* inUse = findItem(window, QStringLiteral("deviceInUse"));
    QVERIFY(inUse && inUse->isVisible());
    // The reason is said once on the page: the line above has it.
    QCOMPARE(inUse->property("text").toString(), QStringLiteral("In use: ") + running.app.model()->device());

    for (const QString theme : {QStringLiteral("light"), QStringLiteral("dark")}) {
        running.app.settings()->setTheme(theme);
        QTest::qWait(200);
        QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-device-setting-%1.png").arg(theme)));
    }

    // The CPU, chosen with the keyboard in the box, is saved and used at the next load.
    box->forceActiveFocus();
    QTest::keyClick(window, Qt::Key_Up);
    QTRY_COMPARE(running.app.settings()->device(), QString("cpu"));
    QTRY_COMPARE(box->property("count").toInt(), 2);
    QCOMPARE(box->property("currentText").toString(), QStringLiteral("CPU"));
    QTRY_COMPARE(arbor::Store(db.path()).app_setting("engine.device"), std::optional<std::string>("cpu"));
    // The reload reads the file's header before it unloads anything (the model picker), so
    // the model goes through "loading" a moment after the click.
    QStringList states;
    QObject::connect(running.app.model(), &arbor::app::ModelService::stateChanged, window,
                     [&] { states << running.app.model()->state(); });
    click(window, findItem(window, QStringLiteral("reloadModelButton")));
    QTRY_VERIFY_WITH_TIMEOUT(states.contains(QStringLiteral("loading")) && running.app.model()->ready(), 60000);
    QTRY_VERIFY(!fallback->isVisible());
    QCOMPARE(inUse->property("text").toString(), QStringLiteral("In use: ") + running.app.model()->device());
}

int main(int argc, char** argv) {
    return arbor::test::runWindowTests<TestDeviceSetting>(argc, argv);
}
#include "test_device_setting.moc"
