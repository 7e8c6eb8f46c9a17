#include "window_test_support.h"

#include "test_support.h"

#include <QMutex>

#include <cmath>
#include <ctime>
#include <QtQuickTest/quicktest.h>
#include <QtTest>

namespace arbor::test {

namespace {

void collect(QQuickItem* item, const QString& objectName, QList<QQuickItem*>& out) {
    if (item->objectName() == objectName) out.push_back(item);
    for (QQuickItem* child : item->childItems()) collect(child, objectName, out);
}

} // namespace

QList<QQuickItem*> itemsNamed(QQuickItem* item, const QString& objectName) {
    QList<QQuickItem*> out;
    collect(item, objectName, out);
    return out;
}

QQuickItem* findItem(QQuickWindow* window, const QString& objectName) {
    const QList<QQuickItem*> items = itemsNamed(window->contentItem(), objectName);
    return items.isEmpty() ? nullptr : items.front();
}

QList<QQuickItem*> visibleItems(QQuickWindow* window, const QString& objectName) {
    QList<QQuickItem*> out;
    for (QQuickItem* item : itemsNamed(window->contentItem(), objectName))
        if (item->isVisible()) out.push_back(item);
    return out;
}

void startWithModel(AppWindow& fresh, QSize size) {
    QVERIFY(fresh.window);
    if (size.isValid()) fresh.window->resize(size);
    fresh.app.start(QString::fromStdString(model_path().string()));
    QVERIFY(QTest::qWaitForWindowExposed(fresh.window));
    QTRY_VERIFY_WITH_TIMEOUT(fresh.app.started() && fresh.app.model()->ready(), 60000);
}

namespace {
void typeAscii(QQuickWindow* window, const QString& text) {
    for (const QChar c : text) QTest::keyClick(window, c.toLatin1());
}
} // namespace

void typeAndSend(QQuickWindow* window, const QString& text) {
    QQuickItem* input = findItem(window, QStringLiteral("composerInput"));
    QVERIFY(input);
    QTRY_VERIFY(input->hasActiveFocus());
    typeAscii(window, text);
    QCOMPARE(input->property("text").toString(), text);
    QTest::keyClick(window, Qt::Key_Return);
}

namespace {
// Scrolls each Flickable above `item` (a ScrollView's content, a list) just enough to
// show it, as a user does before clicking something below the fold.
void scrollIntoView(QQuickItem* item) {
    for (QQuickItem* view = item->parentItem(); view; view = view->parentItem()) {
        if (!view->inherits("QQuickFlickable")) continue;
        auto* content = view->property("contentItem").value<QQuickItem*>();
        if (!content) continue;
        // The whole item: a text field's boundingRect() is only its text.
        const QRectF r = item->mapRectToItem(content, QRectF(0, 0, item->width(), item->height()));
        const qreal top = view->property("contentY").toReal();
        if (r.top() < top) view->setProperty("contentY", r.top());
        else if (r.bottom() > top + view->height()) view->setProperty("contentY", r.bottom() - view->height());
        else continue;
        // The layouts of what moved into view settle before the click is placed.
        QTest::qWait(50);
    }
}
} // namespace

namespace {
// Whether the popups (dialogs, menus) holding `item` have finished opening: they open with
// a scale and fade, and a click placed meanwhile lands beside the item, or outside the
// popup, which closes it. Near 1, not exactly: under load an eased transition can rest a
// rounding step short of its end (a scale of 0.99999994 was seen).
bool popupsSettled(QQuickItem* item) {
    const auto opened = [](qreal v) { return std::abs(v - 1.0) < 1e-3; };
    for (QQuickItem* i = item; i; i = i->parentItem())
        if (i->inherits("QQuickPopupItem") && !(opened(i->scale()) && opened(i->opacity()))) return false;
    return true;
}
} // namespace

void click(QQuickWindow* window, QQuickItem* item) {
    if (!QTest::qWaitFor([item] { return popupsSettled(item); }, 5000))
        qWarning("click: the popup holding %s was still opening after 5 s", qPrintable(item->objectName()));
    scrollIntoView(item);
    // Where the item is once its layout has placed it: an item that just became visible
    // (a button shown when a download is offered) is placed at the next polish, and on a
    // busy machine the click came before it and hit the wrong spot.
    if (!QQuickTest::qWaitForPolish(window, 5000)) qWarning("click: the window was still being laid out after 5 s");
    QTest::mouseClick(window, Qt::LeftButton, {}, item->mapToScene(item->boundingRect().center()).toPoint());
}

void replaceText(QQuickWindow* window, QQuickItem* field, const QString& text) {
    QVERIFY(field);
    click(window, field);
    QTRY_VERIFY(field->hasActiveFocus());
    QTest::keyClick(window, Qt::Key_A, Qt::ControlModifier);
    if (text.isEmpty()) QTest::keyClick(window, Qt::Key_Delete);
    typeAscii(window, text);
    QCOMPARE(field->property("text").toString(), text);
}

namespace {

qint64 threadCpuNs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return qint64(t.tv_sec) * 1000000000 + t.tv_nsec;
}

} // namespace

GuiStallMeter::GuiStallMeter() {
    timer_.setInterval(20);
    QObject::connect(&timer_, &QTimer::timeout, [this] { tick(); });
    reset();
    timer_.start();
}

void GuiStallMeter::tick() {
    const qint64 now = clock_.elapsed(), cpu = threadCpuNs();
    longestGap_ = std::max(longestGap_, now - lastTick_);
    longestBusyNs_ = std::max(longestBusyNs_, cpu - lastCpuNs_);
    lastTick_ = now;
    lastCpuNs_ = cpu;
}

void GuiStallMeter::reset() {
    clock_.start();
    lastTick_ = 0;
    lastCpuNs_ = threadCpuNs();
    longestGap_ = longestBusyNs_ = 0;
}

qint64 GuiStallMeter::longestBusyMs() const {
    return std::max(longestBusyNs_, threadCpuNs() - lastCpuNs_) / 1000000;
}

qint64 GuiStallMeter::longestGapMs() const { return std::max(longestGap_, clock_.elapsed() - lastTick_); }

QString GuiStallMeter::describe() const {
    return QStringLiteral("the GUI thread was busy for %1 ms without a break (%2 ms of wall-clock time)")
        .arg(longestBusyMs())
        .arg(longestGapMs());
}

namespace {

QMutex loopMutex;
QStringList loopWarnings;
QtMessageHandler previousHandler = nullptr;

void recordLayoutLoops(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (message.contains(QLatin1String("polish() loop")) || message.contains(QLatin1String("Binding loop"))) {
        QMutexLocker lock(&loopMutex);
        loopWarnings << message;
    }
    if (previousHandler) previousHandler(type, context, message);
}

} // namespace

LayoutLoopWatch::LayoutLoopWatch() {
    QMutexLocker lock(&loopMutex);
    loopWarnings.clear();
    previousHandler = qInstallMessageHandler(recordLayoutLoops);
}

LayoutLoopWatch::~LayoutLoopWatch() { qInstallMessageHandler(previousHandler); }

QStringList LayoutLoopWatch::warnings() const {
    QMutexLocker lock(&loopMutex);
    return loopWarnings;
}

} // namespace arbor::test
