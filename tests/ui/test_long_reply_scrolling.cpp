// A 20,000-word reply restored from the store, read in the real window (offscreen): its
// blocks get items only near the view, so scrolling up measures blocks a screen ahead of
// the view, each off its estimate by a few pixels. What is in sight must stay still
// meanwhile (scroll anchoring), without cutting short a wheel notch or a flick in motion;
// a new width keeps the text at the top of the view in sight; the whole reply copies from
// the bubble's Copy button wherever the view is; a selection in a block survives the block
// scrolling far out of sight and copies with Ctrl+C.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QClipboard>
#include <QElapsedTimer>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QStyleHints>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>
#include <functional>

using namespace arbor::app;
using arbor::test::findItem;
using arbor::test::itemsNamed;
using arbor::test::LayoutLoopWatch;

namespace {

// Prose, headings, lists, tables and code: the shapes whose estimates differ the most from
// their laid-out heights. About 20,000 words.
QString longReply() {
    QString text;
    for (int i = 0; i < 400; ++i) {
        switch (i % 5) {
        case 0: text += QStringLiteral("## Part %1\n\n").arg(i); break;
        case 1: text += QStringLiteral("- item %1 goes first\n- then **item** %2, *longer* than it\n- last\n\n").arg(i).arg(i + 1); break;
        case 2: text += QStringLiteral("```python\nvalue_%1 = compute(%1)\nprint(value_%1)\n```\n\n").arg(i); break;
        case 3: text += QStringLiteral("| a | b |\n|---|---|\n| %1 | %2 |\n\n").arg(i).arg(i * 2); break;
        default: break;
        }
        text += QStringLiteral("Paragraph %1 tells how the river carried small boats past old mills, ").arg(i)
              + QStringLiteral("while children watched from bridges at dusk and the lamps came on. ").repeated(4)
              + QStringLiteral("It ends here.\n\n");
    }
    return text + QStringLiteral("The very last paragraph.");
}

struct RestoredReply {
    arbor::test::TemporaryDatabase db;
    QString text = longReply();
    std::unique_ptr<arbor::test::AppWindow> running;
    QQuickItem* list = nullptr;    // the chat's message list
    QQuickItem* bubble = nullptr;  // the reply's MessageBubble

    // The conversation (a question and the long reply) restored in its tab, the view at
    // the reply's end.
    void open() {
        {
            arbor::Store store(db.path());
            const auto conversation = store.create_conversation("Long reply");
            const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User, "Tell me.", {});
            const auto reply = store.add_message(conversation, question, arbor::Role::Assistant, text.toStdString(), {});
            const arbor::OpenTab tab{conversation, reply, true};
            store.save_open_tabs({&tab, 1});
        }
        running = std::make_unique<arbor::test::AppWindow>(db.path());
        QVERIFY(running->window);
        running->window->resize(900, 700);
        running->app.start(QString::fromStdString(arbor::test::model_path().string()));
        QVERIFY(QTest::qWaitForWindowExposed(running->window));
        QTRY_VERIFY_WITH_TIMEOUT(running->app.started(), 30000);
        QTRY_COMPARE(running->app.tabs()->current()->messages()->rowCount(), 2);
        list = findItem(running->window, QStringLiteral("messageList"));
        QVERIFY(list);
        QTRY_VERIFY(list->property("contentHeight").toDouble() > 20 * list->height());
        QTRY_VERIFY(list->property("atYEnd").toBool());
        for (QQuickItem* card : itemsNamed(running->window->contentItem(), QStringLiteral("replyCard")))
            bubble = card->parentItem();
        QVERIFY(bubble);
    }
    qreal contentY() const { return list->property("contentY").toDouble(); }
    // Scrolls as the user does: the view no longer follows the reply's end.
    void scrollTo(qreal y) {
        list->setProperty("followEnd", false);
        list->setProperty("contentY", y);
        settle();
    }
    // Until the lists have laid out what moved into view (items made, measured, placed).
    void settle() {
        for (int i = 0; i < 3; ++i) {
            running->window->grabWindow();  // polish, layout and a frame
            QCoreApplication::processEvents();
        }
    }
    // The reply's prose blocks wholly in sight, top to bottom by where they are in the list.
    QList<QQuickItem*> proseInSight() const {
        QList<QQuickItem*> out;
        for (QQuickItem* text : itemsNamed(bubble, QStringLiteral("markdownText"))) {
            const QRectF r = text->mapRectToItem(list, QRectF(0, 0, text->width(), text->height()));
            if (text->isVisible() && r.top() >= 0 && r.bottom() <= list->height()) out.push_back(text);
        }
        std::sort(out.begin(), out.end(), [this](QQuickItem* a, QQuickItem* b) {
            return a->mapToItem(list, QPointF()).y() < b->mapToItem(list, QPointF()).y();
        });
        return out;
    }
    qreal yInView(QQuickItem* item) const { return item->mapToItem(list, QPointF()).y(); }
    bool moving() const { return list->property("moving").toBool(); }

    // Starts a movement up with `start`, waits until it ends and returns how far the
    // topmost prose block in sight moved down meanwhile (what the user sees scroll). The
    // block must never move back up in a frame.
    qreal movedUpBy(const std::function<void()>& start) {
        const QList<QQuickItem*> inSight = proseInSight();
        if (inSight.isEmpty()) {
            QTest::qFail(qPrintable(QStringLiteral("nothing in sight at %1").arg(contentY())), __FILE__, __LINE__);
            return 0;
        }
        QPointer<QQuickItem> chosen = inSight.front();
        const qreal from = yInView(chosen);
        qreal last = from;
        start();
        QElapsedTimer waited;
        waited.start();
        do {
            running->window->grabWindow();  // a frame, as the screen gets it
            QTest::qWait(8);
            if (!chosen) break;
            const qreal now = yInView(chosen);
            if (now < last - 0.5) {
                QTest::qFail(qPrintable(QStringLiteral("the block in sight went from %1 to %2 in one frame").arg(last).arg(now)),
                             __FILE__, __LINE__);
                return 0;
            }
            last = now;
        } while ((moving() || waited.elapsed() < 50) && waited.elapsed() < 10000);
        if (!chosen) {
            QTest::qFail("the block in sight went", __FILE__, __LINE__);
            return 0;
        }
        settle();
        return yInView(chosen) - from;
    }
};

// One notch of a mouse wheel up over the list, as the window gets it: an angle delta of
// 120 with the pixel delta a platform may add, no scroll phase.
void wheelNotchUp(QQuickWindow* window, QQuickItem* over, qreal pixels) {
    static ulong timestamp = 1000;
    timestamp += 500;
    const QPointF at = over->mapToScene(QPointF(over->width() / 2, over->height() / 2));
    QWheelEvent event(at, window->mapToGlobal(at), QPoint(0, int(pixels)), QPoint(0, 120), Qt::NoButton, Qt::NoModifier,
                      Qt::NoScrollPhase, false);
    event.setTimestamp(timestamp);
    QGuiApplication::sendEvent(window, &event);
}

} // namespace

class TestLongReplyScrolling : public QObject {
    Q_OBJECT
private slots:
    void scrollingUpKeepsWhatIsInSightStill();
    void wheelNotchesScrollTheirWholeWay();
    void flicksScrollTheirWholeWay();
    void newWidthKeepsTheTopOfTheViewInSight();
    void copyWorksWhereverTheViewIs();
    void selectionSurvivesScrollingAway();
};

// Half a screen at a time from the end up to the middle of the reply: after each step the
// topmost prose block in sight before it is exactly half a screen lower, although blocks
// above the view were measured (and came out at other heights than estimated) meanwhile.
void TestLongReplyScrolling::scrollingUpKeepsWhatIsInSightStill() {
    ARBOR_REQUIRE_MODEL();
    const LayoutLoopWatch loops;
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    QSignalSpy shifted(reply.bubble, SIGNAL(shiftedInSight(qreal)));
    QVERIFY(shifted.isValid());
    const qreal step = std::round(reply.list->height() / 2);
    const qreal middle = reply.contentY() / 2;
    int steps = 0;
    qreal worst = 0;
    while (reply.contentY() > middle) {
        const QList<QQuickItem*> before = reply.proseInSight();
        QVERIFY2(!before.isEmpty(), qPrintable(QStringLiteral("nothing in sight at %1").arg(reply.contentY())));
        QPointer<QQuickItem> chosen = before.front();
        const qreal y = reply.yInView(chosen);
        const QString what = chosen->property("text").toString().left(40);
        reply.scrollTo(reply.contentY() - step);
        QVERIFY2(chosen, qPrintable(QStringLiteral("the block \"%1\" went at step %2").arg(what).arg(steps)));
        const qreal off = reply.yInView(chosen) - (y + step);
        worst = std::max(worst, std::abs(off));
        QVERIFY2(std::abs(off) <= 2, qPrintable(QStringLiteral("step %1: \"%2\" moved %3 px more than the scroll")
                                                     .arg(steps).arg(what).arg(off)));
        ++steps;
    }
    qInfo("%d steps up, %lld shifts from blocks measured above the view, worst offset %.1f px", steps,
          qlonglong(shifted.count()), worst);
    QVERIFY2(shifted.count() > 0, "no block above the view was measured off its estimate: nothing was anchored");
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
}

// Notch by notch from the reply's end up through a few screens: each notch moves what is in
// sight by the distance Qt gives a notch (wheelScrollLines lines of 24 px, from rest), although
// blocks above the view are measured while it moves. Setting the view's position to anchor
// them would end the notch's movement where it was.
void TestLongReplyScrolling::wheelNotchesScrollTheirWholeWay() {
    ARBOR_REQUIRE_MODEL();
    const LayoutLoopWatch loops;
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    QSignalSpy shifted(reply.bubble, SIGNAL(shiftedInSight(qreal)));
    const qreal notch = QGuiApplication::styleHints()->wheelScrollLines() * 24;
    const int notches = 40;
    qreal total = 0;
    for (int i = 0; i < notches; ++i) {
        const qreal moved = reply.movedUpBy([&] { wheelNotchUp(reply.running->window, reply.list, notch); });
        if (QTest::currentTestFailed()) return;
        QVERIFY2(std::abs(moved - notch) <= 2, qPrintable(QStringLiteral("notch %1 moved the text %2 px, not %3 (%4 shifts so far)")
                                                              .arg(i).arg(moved).arg(notch).arg(shifted.count())));
        total += moved;
    }
    qInfo("%d notches moved the text %.1f px (asked %.0f); %lld shifts from blocks measured above the view", notches,
          total, notches * notch, qlonglong(shifted.count()));
    QVERIFY2(std::abs(total - notches * notch) <= 4, qPrintable(QStringLiteral("moved %1 px in all").arg(total)));
    QVERIFY2(shifted.count() > 0, "no block above the view was measured off its estimate: nothing was anchored");
    QCOMPARE(reply.list->property("followEnd").toBool(), false);
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
}

// Kinetic flicks up from the middle of the reply (Flickable.flick, what releasing a drag
// starts): each moves what is in sight v^2 / (2 deceleration), the whole way, while blocks
// above the view are measured.
void TestLongReplyScrolling::flicksScrollTheirWholeWay() {
    ARBOR_REQUIRE_MODEL();
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    reply.scrollTo(reply.contentY() / 2);
    QSignalSpy shifted(reply.bubble, SIGNAL(shiftedInSight(qreal)));
    const qreal velocity = std::min<qreal>(1500, reply.list->property("maximumFlickVelocity").toDouble());
    const qreal distance = velocity * velocity / (2 * reply.list->property("flickDeceleration").toDouble());
    for (int i = 0; i < 4; ++i) {
        const int before = int(shifted.count());
        const qreal moved = reply.movedUpBy([&] {
            QVERIFY(QMetaObject::invokeMethod(reply.list, "flick", Q_ARG(qreal, 0), Q_ARG(qreal, velocity)));
        });
        if (QTest::currentTestFailed()) return;
        qInfo("flick %d moved the text %.1f px (expected %.1f), %d blocks measured above the view meanwhile", i, moved,
              distance, int(shifted.count()) - before);
        QVERIFY2(std::abs(moved - distance) <= 2,
                 qPrintable(QStringLiteral("flick %1 moved the text %2 px, not %3").arg(i).arg(moved).arg(distance)));
    }
    QVERIFY2(shifted.count() > 0, "no block above the view was measured off its estimate: nothing was anchored");
}

// In the middle of the reply, the window made narrower and then wider again: the block at
// the top of the view wraps anew, the thousands of blocks above it too (estimated), and
// still the topmost prose block in sight before stays in sight, near where it was.
void TestLongReplyScrolling::newWidthKeepsTheTopOfTheViewInSight() {
    ARBOR_REQUIRE_MODEL();
    const LayoutLoopWatch loops;
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    reply.scrollTo(reply.contentY() / 2);
    for (const int width : {620, 1200, 900}) {
        const QList<QQuickItem*> before = reply.proseInSight();
        QVERIFY(!before.isEmpty());
        // By its text: the block's item may be made again meanwhile.
        const QString text = before.front()->property("text").toString();
        const QString what = text.left(40);
        const qreal y = reply.yInView(before.front());
        reply.running->window->resize(width, reply.running->window->height());
        QTRY_COMPARE(reply.running->window->width(), width);
        for (int i = 0; i < 3; ++i) {
            QTest::qWait(20);
            reply.settle();
        }
        QQuickItem* chosen = nullptr;
        for (QQuickItem* item : itemsNamed(reply.bubble, QStringLiteral("markdownText")))
            if (item->isVisible() && item->property("text").toString() == text) chosen = item;
        QVERIFY2(chosen, qPrintable(QStringLiteral("\"%1\" went out of sight at width %2").arg(what).arg(width)));
        const qreal now = reply.yInView(chosen);
        qInfo("width %d: \"%s\" from %.1f to %.1f px in the view", width, qPrintable(what), y, now);
        QVERIFY2(now >= 0 && now + chosen->height() <= reply.list->height(),
                 qPrintable(QStringLiteral("\"%1\" is at %2 px at width %3, out of the view").arg(what).arg(now).arg(width)));
        QVERIFY2(std::abs(now - y) <= reply.list->height() / 4,
                 qPrintable(QStringLiteral("\"%1\" moved from %2 to %3 px at width %4").arg(what).arg(y).arg(now).arg(width)));
    }
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
}

// The bubble's Copy button copies the whole reply, at its start, its middle and its end
// (most of its blocks have no items then).
void TestLongReplyScrolling::copyWorksWhereverTheViewIs() {
    ARBOR_REQUIRE_MODEL();
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    QQuickItem* copy = nullptr;
    for (QQuickItem* button : itemsNamed(reply.bubble, QStringLiteral("copyMessageButton"))) copy = button;
    QVERIFY(copy);
    const qreal end = reply.contentY();
    for (const qreal y : {end, end / 2, 0.0}) {
        reply.scrollTo(y);
        QGuiApplication::clipboard()->clear();
        QVERIFY(QMetaObject::invokeMethod(copy, "clicked"));
        QCOMPARE(QGuiApplication::clipboard()->text(), reply.text);
    }
}

// Part of the first paragraph selected, the view scrolled to the reply's end and back to
// its middle: the selection is still there and Ctrl+C copies it.
void TestLongReplyScrolling::selectionSurvivesScrollingAway() {
    ARBOR_REQUIRE_MODEL();
    RestoredReply reply;
    reply.open();
    if (QTest::currentTestFailed()) return;
    const qreal end = reply.contentY();
    reply.scrollTo(0);
    QPointer<QQuickItem> first;
    for (QQuickItem* text : reply.proseInSight())
        if (!first && text->property("text").toString().startsWith(QStringLiteral("Paragraph 0 "))) first = text;
    QVERIFY(first);
    QVERIFY(QMetaObject::invokeMethod(first, "select", Q_ARG(int, 0), Q_ARG(int, 12)));
    first->forceActiveFocus();
    const QString selected = first->property("selectedText").toString();
    QCOMPARE(selected, QStringLiteral("Paragraph 0 "));

    reply.scrollTo(end);
    reply.scrollTo(end / 2);
    QVERIFY2(first && first->window(), "the selected block's item went when it scrolled out of sight");
    QCOMPARE(first->property("selectedText").toString(), selected);
    QGuiApplication::clipboard()->clear();
    QTest::keyClick(reply.running->window, Qt::Key_C, Qt::ControlModifier);
    QTRY_COMPARE(QGuiApplication::clipboard()->text(), selected);

    // Once the selection is gone, so is the item (it is far out of sight).
    QVERIFY(QMetaObject::invokeMethod(first, "deselect"));
    reply.settle();
    QTRY_VERIFY(!first);
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestLongReplyScrolling>(argc, argv); }

#include "test_long_reply_scrolling.moc"
