// Messages of every length and shape through the real window with the default model: a
// text pasted into the composer (Ctrl+V) and sent, shown collapsed and expanded with
// "Show more", and the tab restored by a restarted app; a long reply of each shape
// restored from the store. Throughout, the GUI thread must keep running its event loop
// (no stall over kMaxStallMs) and Qt must report no layout loop. Each window is saved as
// a PNG in the build directory.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QClipboard>
#include <QFile>
#include <QGuiApplication>
#include <QSignalSpy>
#include <QtTest>

using namespace arbor::app;
using arbor::test::findItem;
using arbor::test::GuiStallMeter;
using arbor::test::LayoutLoopWatch;
using arbor::test::visibleItems;

namespace {

// Generous: a frozen window is busy for minutes; a responsive one for a frame or a layout.
constexpr qint64 kMaxStallMs = 2000;

QString words(int count) {
    static const char* const kWords[] = {"the",   "river", "carried", "small",  "boats", "past",  "old",
                                         "mills", "while", "children", "watched", "from", "bridges", "at",
                                         "dusk",  "and",   "lamps",   "came",   "on"};
    QString out;
    for (int i = 0; i < count; ++i) {
        out += QLatin1String(kWords[(i * 7 + i / 19) % std::size(kWords)]);
        out += (i + 1) % 120 == 0 ? QStringLiteral(".\n\n") : (i + 1) % 12 == 0 ? QStringLiteral(". ") : QStringLiteral(" ");
    }
    return out.trimmed();
}

QString oneLongLine(int chars) {
    const QString alphabet = QStringLiteral("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    QString out;
    for (int i = 0; i < chars; ++i) out += alphabet[(i * 13) % alphabet.size()];
    return out;
}

// Drawn from 3,500 ideographs, about the characters in common use in Chinese text.
QString cjkWithoutSpaces(int chars) {
    QString out;
    for (int i = 0; i < chars; ++i)
        out += (i + 1) % 40 == 0 ? QChar(0x3002) : QChar(0x4E00 + (i * 7919) % 3500);  // "。" now and then
    return out;
}

QString codeLines(int lines) {
    QString out;
    for (int i = 0; i < lines; ++i)
        out += QStringLiteral("    int value_%1 = compute(%1, \"item %1\") * 2;  // line %1\n").arg(i);
    return out;
}

QString emojiRuns(int count) {
    // Plain, skin-toned, a ZWJ family, flags and a keycap: one and several code points each.
    const QStringList kinds = {QString::fromUtf8("😀"), QString::fromUtf8("👍🏽"), QString::fromUtf8("👩‍👩‍👧‍👦"),
                               QString::fromUtf8("🇯🇵"), QString::fromUtf8("🏳️‍🌈"), QString::fromUtf8("1️⃣"),
                               QString::fromUtf8("🦀"), QString::fromUtf8("🎉")};
    QString out;
    for (int i = 0; i < count; ++i) out += kinds[(i / 25) % kinds.size()];
    return out;
}

struct Rss {
    static qint64 mib() {
        QFile f(QStringLiteral("/proc/self/status"));
        if (!f.open(QIODevice::ReadOnly)) return 0;
        for (const QByteArray& line : f.readAll().split('\n'))
            if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').front().toLongLong() / 1024;
        return 0;
    }
};

void addShapes() {
    QTest::addColumn<QString>("text");
    QTest::newRow("20000-words") << words(20000);
    QTest::newRow("50000-character-line") << oneLongLine(50000);
    QTest::newRow("cjk-without-spaces") << cjkWithoutSpaces(20000);
    QTest::newRow("2000-line-code-block") << QStringLiteral("```cpp\n") + codeLines(2000) + QStringLiteral("```");
    QTest::newRow("emoji-runs") << emojiRuns(10000);
}

// Fails the test (and returns from it) when the GUI thread was busy too long at a stretch.
#define CHECK_RESPONSIVE(meter)                                                      \
    do {                                                                             \
        qInfo("%s", qPrintable((meter).describe()));                                 \
        QVERIFY2((meter).longestBusyMs() < kMaxStallMs, qPrintable((meter).describe())); \
    } while (false)

QString screenshotPath(const QString& what) {
    const char* tag = QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction();
    return QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-long-%1-%2.png").arg(QString::fromLatin1(tag), what);
}

void saveScreenshot(QQuickWindow* window, const QString& what) {
    QTest::qWait(100);  // let the last frame render
    const QImage shot = window->grabWindow();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(screenshotPath(what)));
}

// The one visible bubble text of the user's message.
QQuickItem* userText(QQuickWindow* window) {
    const QList<QQuickItem*> texts = visibleItems(window, QStringLiteral("userText"));
    return texts.size() == 1 ? texts.front() : nullptr;
}

} // namespace

class TestLongMessages : public QObject {
    Q_OBJECT
private slots:
    void pastedMessageRendersAndIsRestored_data() { addShapes(); }
    void pastedMessageRendersAndIsRestored();
    void longReplyIsRestored_data() { addShapes(); }
    void longReplyIsRestored();
    void messageThatFitsTheContextGetsAReply();
};

// The user pastes the text and sends it. It is too long for the model's context, so the
// reply is an error, which must be shown as such; the message itself is stored and shown
// collapsed, expands on "Show more", and comes back with its tab after a restart.
void TestLongMessages::pastedMessageRendersAndIsRestored() {
    ARBOR_REQUIRE_MODEL();
    QFETCH(QString, text);
    const LayoutLoopWatch loops;
    GuiStallMeter meter;
    const qint64 rssBefore = Rss::mib();
    const arbor::test::TemporaryDatabase db;
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        ArborApp& app = running.app;
        QQuickWindow* window = running.window;
        QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
        QTRY_COMPARE(app.tabs()->rowCount(), 1);
        ChatSession* session = app.tabs()->current();
        QQuickItem* input = findItem(window, QStringLiteral("composerInput"));
        QVERIFY(input);
        QTRY_VERIFY(input->hasActiveFocus());

        meter.reset();
        QGuiApplication::clipboard()->setText(text);
        QTest::keyClick(window, Qt::Key_V, Qt::ControlModifier);
        QCOMPARE(input->property("text").toString(), text);
        QTest::qWait(50);  // a person does not press Enter in the same instant
        QTest::keyClick(window, Qt::Key_Return);
        QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 2 && !session->generating(), 120000);
        QCOMPARE(session->messages()->row(0).text, text);
        QVERIFY2(session->error().contains(QStringLiteral("context")), qPrintable(session->error()));
        QCOMPARE(input->property("text").toString(), QString());

        // Collapsed: the start of the text and "Show more".
        QTRY_VERIFY(userText(window));
        QQuickItem* shown = userText(window);
        const QString start = shown->property("text").toString();
        QVERIFY2(start.size() < text.size() && text.startsWith(start.chopped(1)), qPrintable(start.left(80)));
        const QList<QQuickItem*> more = visibleItems(window, QStringLiteral("showMoreButton"));
        QCOMPARE(more.size(), 1);
        saveScreenshot(window, QStringLiteral("collapsed"));
        arbor::test::click(window, more.front());
        QTRY_COMPARE(userText(window)->property("text").toString(), text);
        QTRY_VERIFY(userText(window)->height() > window->height());
        saveScreenshot(window, QStringLiteral("expanded"));
        // A reload (as after a branch switch) makes the items again: still expanded.
        QSignalSpy loaded(session->messages(), &MessageListModel::loaded);
        session->messages()->load(session->conversationId());
        QVERIFY(loaded.wait(30000));
        QTRY_VERIFY(userText(window));
        QCOMPARE(userText(window)->property("text").toString(), text);
        CHECK_RESPONSIVE(meter);
    }

    // A restart brings the tab back, and the window keeps responding while it shows it.
    {
        arbor::test::AppWindow running(db.path());
        ArborApp& app = running.app;
        QQuickWindow* window = running.window;
        QVERIFY(window);
        meter.reset();
        app.start(QString::fromStdString(arbor::test::model_path().string()));
        QVERIFY(QTest::qWaitForWindowExposed(window));
        QTRY_VERIFY_WITH_TIMEOUT(app.started(), 30000);
        QCOMPARE(app.tabs()->rowCount(), 1);
        QTRY_COMPARE(app.tabs()->current()->messages()->rowCount(), 2);
        QCOMPARE(app.tabs()->current()->messages()->row(0).text, text);
        QTRY_VERIFY(userText(window));
        QTRY_VERIFY_WITH_TIMEOUT(app.model()->ready(), 60000);
        saveScreenshot(window, QStringLiteral("restored"));
        CHECK_RESPONSIVE(meter);
    }
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
    const qint64 grown = Rss::mib() - rssBefore;
    QVERIFY2(grown < 1024, qPrintable(QStringLiteral("memory grew by %1 MiB").arg(grown)));
}

// A conversation whose reply is the long text (code as a fenced block) is restored: the
// reply renders as markdown, the view follows its end, and the window keeps responding.
void TestLongMessages::longReplyIsRestored() {
    ARBOR_REQUIRE_MODEL();
    QFETCH(QString, text);
    const LayoutLoopWatch loops;
    const arbor::test::TemporaryDatabase db;
    {
        arbor::Store store(db.path());
        const auto conversation = store.create_conversation("Long reply");
        const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User, "Show me.", {});
        const auto reply = store.add_message(conversation, question, arbor::Role::Assistant, text.toStdString(), {});
        const arbor::OpenTab tab{conversation, reply, true};
        store.save_open_tabs({&tab, 1});
    }
    GuiStallMeter meter;
    arbor::test::AppWindow running(db.path());
    ArborApp& app = running.app;
    QQuickWindow* window = running.window;
    QVERIFY(window);
    app.start(QString::fromStdString(arbor::test::model_path().string()));
    QVERIFY(QTest::qWaitForWindowExposed(window));
    QTRY_VERIFY_WITH_TIMEOUT(app.started(), 30000);
    QCOMPARE(app.tabs()->rowCount(), 1);
    QTRY_COMPARE(app.tabs()->current()->messages()->rowCount(), 2);
    QTRY_VERIFY(!visibleItems(window, QStringLiteral("markdownText")).isEmpty() ||
                !visibleItems(window, QStringLiteral("codeText")).isEmpty());
    QQuickItem* list = findItem(window, QStringLiteral("messageList"));
    QVERIFY(list);
    QTRY_VERIFY(list->property("contentHeight").toDouble() > 2 * list->height());
    QTRY_VERIFY2(list->property("atYEnd").toBool(),
                 qPrintable(QStringLiteral("contentY %1 of %2 (origin %3, height %4), following the end: %5")
                                .arg(list->property("contentY").toDouble()).arg(list->property("contentHeight").toDouble())
                                .arg(list->property("originY").toDouble()).arg(list->height())
                                .arg(list->property("followEnd").toBool())));
    QTRY_VERIFY_WITH_TIMEOUT(app.model()->ready(), 60000);
    if (text.startsWith(QStringLiteral("```"))) {
        const QList<QQuickItem*> code = visibleItems(window, QStringLiteral("codeText"));
        QCOMPARE(code.size(), 1);
        QCOMPARE(code.front()->property("lineCount").toInt(), 2000);
    }
    saveScreenshot(window, QStringLiteral("reply"));
    CHECK_RESPONSIVE(meter);
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
}

// About 1,500 words (where the window used to freeze for good) fit the default model's
// context: the model reads them and a reply streams in under the collapsed message.
void TestLongMessages::messageThatFitsTheContextGetsAReply() {
    ARBOR_REQUIRE_MODEL();
    const LayoutLoopWatch loops;
    arbor::test::FreshApp fresh;
    arbor::test::startWithModel(fresh);
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = fresh.window;
    QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
    QTRY_COMPARE(fresh.app.tabs()->rowCount(), 1);
    ChatSession* session = fresh.app.tabs()->current();
    const QString text = words(1500) + QStringLiteral("\n\nSummarise this in one sentence.");
    GuiStallMeter meter;
    QGuiApplication::clipboard()->setText(text);
    QTRY_VERIFY(findItem(window, QStringLiteral("composerInput"))->hasActiveFocus());
    QTest::keyClick(window, Qt::Key_V, Qt::ControlModifier);
    QTest::keyClick(window, Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 2 && session->messages()->row(1).text.size() > 20,
                             180000);
    QVERIFY(!visibleItems(window, QStringLiteral("markdownText")).isEmpty());
    QCOMPARE(visibleItems(window, QStringLiteral("showMoreButton")).size(), 1);
    QTest::keyClick(window, Qt::Key_Escape);
    QTRY_VERIFY(!session->generating());
    QVERIFY2(session->error().isEmpty(), qPrintable(session->error()));
    saveScreenshot(window, QStringLiteral("reply"));
    CHECK_RESPONSIVE(meter);
    QVERIFY2(loops.warnings().isEmpty(), qPrintable(loops.warnings().join('\n')));
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestLongMessages>(argc, argv); }

#include "test_long_messages.moc"
