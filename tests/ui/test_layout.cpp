// The window's layout, in the real window (offscreen) over a stored conversation and
// no model: the sidebar collapses with its button and by itself in a narrow window (then
// floats over the chat when asked for); messages and the composer keep to a centred
// reading column in a wide window; tabs that do not fit scroll so the last can be
// reached; the settings window switches pages; message text and the composer's are the
// same size; a reply's stats line stays inside its card.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QFontInfo>
#include <QtTest>

#include <cmath>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

namespace {

constexpr int kOpenTabs = 8;

QRectF sceneRect(const QQuickItem* item) { return item->mapRectToScene(item->boundingRect()); }

// A database with kOpenTabs conversations open in tabs, the first current: a question
// and a reply with prose, code and its stats in the first.
void seed(const std::filesystem::path& db) {
    arbor::Store store(db);
    std::vector<arbor::OpenTab> tabs;
    for (int n = kOpenTabs; n >= 1; --n) {
        const auto id = store.create_conversation("Conversation number " + std::to_string(n) + " about something");
        std::optional<arbor::MessageId> leaf;
        if (n == 1) {
            const auto question = store.add_message(id, std::nullopt, arbor::Role::User,
                                                    "How do I list the files of a folder in C++?", {});
            leaf = store.add_message(id, question, arbor::Role::Assistant,
                                     "Use `std::filesystem::directory_iterator`, which walks one directory and gives "
                                     "each entry in the order the file system returns them; sort the names yourself "
                                     "when you need a stable order.\n\n```cpp\nfor (auto& e : "
                                     "std::filesystem::directory_iterator(\".\"))\n    std::puts(e.path().c_str());\n```",
                                     {}, arbor::MessageState::streaming);
            store.finish_message(*leaf, arbor::MessageState::complete, arbor::MessageStats{787, 512, 143.0, 41.7, "stop"});
        }
        tabs.insert(tabs.begin(), arbor::OpenTab{id, leaf, n == 1});
    }
    store.save_open_tabs(tabs);
}

// The app over a seeded database, started without a model, the window at `size`.
struct SeededApp : arbor::test::TemporaryDatabase {
    explicit SeededApp(QSize size) {
        seed(path());
        running = std::make_unique<arbor::test::AppWindow>(path());
        QVERIFY(running->window);
        running->window->resize(size);
        running->app.start(QString::fromStdString((path().parent_path() / "no-model.gguf").string()));
        QVERIFY(QTest::qWaitForWindowExposed(running->window));
        QTRY_VERIFY_WITH_TIMEOUT(running->app.started(), 30000);
        QTRY_COMPARE(running->app.tabs()->rowCount(), kOpenTabs);
        QTRY_VERIFY(!visibleItems(running->window, QStringLiteral("markdownText")).isEmpty());
    }
    std::unique_ptr<arbor::test::AppWindow> running;
    QQuickWindow* window() const { return running->window; }
};

} // namespace

class TestLayout : public QObject {
    Q_OBJECT
private slots:
    void sidebarCollapses();
    void messagesKeepToAReadingColumn();
    void statsStayInsideTheReply();
    void tabsScrollToTheLast();
    void settingsSwitchPages();
    void bodyTextIsOneSize();
};

void TestLayout::sidebarCollapses() {
    SeededApp seeded(QSize(1200, 800));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    QQuickItem* sidebar = findItem(window, QStringLiteral("sidebar"));
    QQuickItem* chat = findItem(window, QStringLiteral("chatView"));
    QQuickItem* toggle = findItem(window, QStringLiteral("sidebarToggle"));
    QVERIFY(sidebar && chat && toggle);
    QVERIFY(sidebar->isVisible());
    QVERIFY2(chat->width() < 1200 - 250, qPrintable(QString::number(chat->width())));

    // The button hides the docked sidebar and gives its room to the chat, and shows it again.
    click(window, toggle);
    QTRY_VERIFY(!sidebar->isVisible());
    QTRY_COMPARE(chat->width(), 1200.0);
    click(window, toggle);
    QTRY_VERIFY(sidebar->isVisible());
    QTRY_VERIFY(chat->width() < 1200 - 250);

    // A narrow window hides it by itself; asked for, it floats over the chat, which keeps
    // the whole width, and a click beside it closes it.
    window->resize(800, 600);
    QTRY_VERIFY(!sidebar->isVisible());
    QTRY_COMPARE(chat->width(), 800.0);
    click(window, toggle);
    QTRY_VERIFY(sidebar->isVisible());
    QCOMPARE(chat->width(), 800.0);
    QVERIFY(sceneRect(sidebar).intersects(sceneRect(chat)));
    QTest::mouseClick(window, Qt::LeftButton, {}, QPoint(700, 300));
    QTRY_VERIFY(!sidebar->isVisible());

    // Wide again, it is docked as the user left it.
    window->resize(1200, 800);
    QTRY_VERIFY(sidebar->isVisible());
    QTRY_VERIFY(chat->width() < 1200 - 250);
}

void TestLayout::messagesKeepToAReadingColumn() {
    SeededApp seeded(QSize(1600, 1000));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    QQuickItem* list = findItem(window, QStringLiteral("messageList"));
    QVERIFY(list);
    const double middle = sceneRect(list).center().x();
    QTRY_VERIFY(!visibleItems(window, QStringLiteral("replyCard")).isEmpty());
    QList<QQuickItem*> column = visibleItems(window, QStringLiteral("replyCard"));
    column << visibleItems(window, QStringLiteral("composer"));
    QCOMPARE(column.size(), 2);
    for (QQuickItem* item : column) {
        const QRectF r = sceneRect(item);
        QVERIFY2(r.width() <= 800 && r.width() >= 700, qPrintable(item->objectName() + QStringLiteral(" is %1 px wide").arg(r.width())));
        QVERIFY2(std::abs(r.center().x() - middle) <= 2,
                 qPrintable(item->objectName() + QStringLiteral(" centred at %1, not %2").arg(r.center().x()).arg(middle)));
    }
    // The user's card keeps to the right edge of the same column.
    const QList<QQuickItem*> userCards = visibleItems(window, QStringLiteral("userCard"));
    QCOMPARE(userCards.size(), 1);
    QVERIFY(std::abs(sceneRect(userCards.front()).right() - sceneRect(column.front()).right()) <= 1);
}

// In the narrowest window the reply's stats line wraps inside its card.
void TestLayout::statsStayInsideTheReply() {
    SeededApp seeded(QSize(640, 420));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    QTRY_COMPARE(visibleItems(window, QStringLiteral("statsLabel")).size(), 1);
    QQuickItem* stats = visibleItems(window, QStringLiteral("statsLabel")).front();
    QVERIFY(stats->property("text").toString().contains(QStringLiteral("787 prompt tokens")));
    QQuickItem* card = visibleItems(window, QStringLiteral("replyCard")).front();
    QTRY_VERIFY2(sceneRect(stats).right() <= sceneRect(card).right() - 4,
                 qPrintable(QStringLiteral("the stats end at %1, the reply at %2")
                                .arg(sceneRect(stats).right())
                                .arg(sceneRect(card).right())));
}

void TestLayout::tabsScrollToTheLast() {
    SeededApp seeded(QSize(1000, 700));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    QQuickItem* bar = findItem(window, QStringLiteral("tabBar"));
    QVERIFY(bar);
    auto* view = bar->property("contentItem").value<QQuickItem*>();  // the bar's ListView
    QVERIFY(view);
    QTRY_COMPARE(visibleItems(window, QStringLiteral("tab")).size(), kOpenTabs);
    QCOMPARE(seeded.running->app.tabs()->currentIndex(), 0);
    // The tab at the left or right edge of the bar. A ListView lays out only the items in
    // and near its view: a tab's own position says nothing until it has been scrolled to.
    auto tabAtEdge = [&](bool right) {
        int index = -1;
        const qreal x = view->property("contentX").toReal() + (right ? view->width() - 2 : 2);
        QMetaObject::invokeMethod(view, "indexAt", Q_RETURN_ARG(int, index), Q_ARG(qreal, x),
                                  Q_ARG(qreal, view->property("contentY").toReal() + view->height() / 2));
        return index;
    };
    QTRY_VERIFY(view->property("contentWidth").toReal() > view->width() * 2);
    QCOMPARE(tabAtEdge(false), 0);
    QVERIFY(tabAtEdge(true) < kOpenTabs - 1);

    QQuickItem* forward = findItem(window, QStringLiteral("scrollTabsForward"));
    QVERIFY2(forward && forward->isVisible(), "no button scrolls the tabs");
    for (int clicks = 0; clicks < kOpenTabs && forward->isEnabled(); ++clicks) {
        click(window, forward);
        QTest::qWait(50);
    }
    QCOMPARE(tabAtEdge(true), kOpenTabs - 1);
    QQuickItem* last = nullptr;
    for (QQuickItem* tab : visibleItems(window, QStringLiteral("tab")))
        if (tab->property("index").toInt() == kOpenTabs - 1) last = tab;
    QVERIFY(last);
    const QRectF r = sceneRect(last), b = sceneRect(bar);
    QVERIFY2(r.left() >= b.left() && r.right() <= b.right() + 0.5,
             qPrintable(QStringLiteral("the last tab at %1..%2, the bar %3..%4").arg(r.left()).arg(r.right()).arg(b.left()).arg(b.right())));
    click(window, last);
    QTRY_COMPARE(seeded.running->app.tabs()->currentIndex(), kOpenTabs - 1);

    // Back to the first with the other arrow.
    QQuickItem* back = findItem(window, QStringLiteral("scrollTabsBack"));
    QVERIFY(back);
    QTRY_VERIFY(back->isEnabled());
    for (int clicks = 0; clicks < kOpenTabs && back->isEnabled(); ++clicks) {
        click(window, back);
        QTest::qWait(50);
    }
    QCOMPARE(tabAtEdge(false), 0);
}

void TestLayout::settingsSwitchPages() {
    SeededApp seeded(QSize(1000, 700));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    click(window, findItem(window, QStringLiteral("settingsButton")));
    QObject* dialog = seeded.running->engine.rootObjects().front()->findChild<QObject*>(QStringLiteral("settingsDialog"));
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->property("opened").toBool());

    const QStringList pages{QStringLiteral("modelSettingsPage"), QStringLiteral("chatSettingsPage"),
                            QStringLiteral("appearanceSettingsPage"), QStringLiteral("localApiSettingsPage"),
                            QStringLiteral("storageSettingsPage")};
    const QList<QQuickItem*> buttons = visibleItems(window, QStringLiteral("settingsPageButton"));
    QCOMPARE(buttons.size(), pages.size());
    auto shownPages = [&] {
        QStringList shown;
        for (const QString& page : pages)
            if (!visibleItems(window, page).isEmpty()) shown << page;
        return shown;
    };
    QCOMPARE(shownPages(), QStringList{pages[0]});
    QVERIFY(findItem(window, QStringLiteral("modelPathField"))->isVisible());
    // In reverse, so that no page is shown only because it was the first.
    for (qsizetype n = pages.size() - 1; n >= 0; --n) {
        click(window, buttons[n]);
        QTRY_COMPARE(shownPages(), QStringList{pages[n]});
    }
    click(window, buttons[2]);
    QTRY_VERIFY(findItem(window, QStringLiteral("themeBox"))->isVisible());
    QVERIFY(!findItem(window, QStringLiteral("modelPathField"))->isVisible());
    // The theme box is wide enough for its longest choice.
    QQuickItem* theme = findItem(window, QStringLiteral("themeBox"));
    QVERIFY2(theme->width() >= theme->property("implicitContentWidth").toReal(),
             qPrintable(QStringLiteral("%1 < %2").arg(theme->width()).arg(theme->property("implicitContentWidth").toReal())));
}

void TestLayout::bodyTextIsOneSize() {
    SeededApp seeded(QSize(1000, 700));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    QQuickItem* composer = findItem(window, QStringLiteral("composerInput"));
    QVERIFY(composer);
    const QFont body = composer->property("font").value<QFont>();
    QVERIFY(body.pixelSize() > 0);
    QList<QQuickItem*> texts = visibleItems(window, QStringLiteral("userText"));
    texts << visibleItems(window, QStringLiteral("markdownText"));
    QVERIFY(texts.size() >= 2);
    for (QQuickItem* text : texts) {
        const QFont font = text->property("font").value<QFont>();
        QVERIFY2(font.pixelSize() == body.pixelSize() && QFontInfo(font).family() == QFontInfo(body).family(),
                 qPrintable(QStringLiteral("%1: %2 px %3, the composer %4 px %5")
                                .arg(text->objectName())
                                .arg(font.pixelSize())
                                .arg(QFontInfo(font).family())
                                .arg(body.pixelSize())
                                .arg(QFontInfo(body).family())));
    }
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestLayout>(argc, argv); }

#include "test_layout.moc"
