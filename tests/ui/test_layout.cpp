// The window's layout, in the real window (offscreen) over a stored conversation and
// no model: the sidebar collapses with its button and by itself in a narrow window (then
// floats over the chat when asked for); messages and the composer keep to a centred
// reading column in a wide window; tabs that do not fit scroll so the last can be
// reached; the settings window switches pages, and every choice box on each page shows
// its whole text the first time the page is shown; message text and the composer's are
// the same size; a reply's stats line stays inside its card.
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
    void settingsChoicesFitWhenFirstShown_data();
    void settingsChoicesFitWhenFirstShown();
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

namespace {

// The pages of the settings window, in the order of its list.
const QStringList kSettingsPages{QStringLiteral("modelSettingsPage"), QStringLiteral("chatSettingsPage"),
                                 QStringLiteral("appearanceSettingsPage"), QStringLiteral("localApiSettingsPage"),
                                 QStringLiteral("storageSettingsPage")};

// Opens the settings window with its button (in the sidebar, shown first in a narrow
// window) and waits until it is open.
void openSettings(SeededApp& seeded) {
    QQuickWindow* window = seeded.window();
    QQuickItem* button = findItem(window, QStringLiteral("settingsButton"));
    QVERIFY(button);
    if (!button->isVisible()) click(window, findItem(window, QStringLiteral("sidebarToggle")));
    QTRY_VERIFY(button->isVisible());
    click(window, button);
    QObject* dialog = seeded.running->engine.rootObjects().front()->findChild<QObject*>(QStringLiteral("settingsDialog"));
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->property("opened").toBool());
}

// Every ComboBox shown below `item`.
void collectChoiceBoxes(QQuickItem* item, QList<QQuickItem*>& out) {
    if (!item->isVisible()) return;
    if (item->inherits("QQuickComboBox")) out << item;
    for (QQuickItem* child : item->childItems()) collectChoiceBoxes(child, out);
}

// Why a choice box does not show its whole current text (empty when it does): its
// content item must hold the text as it lays it out (on one line, or wrapped on several),
// neither elided nor running past its edges, and end before the drop indicator begins.
QString choiceCutShort(QQuickItem* box) {
    auto* content = box->property("contentItem").value<QQuickItem*>();
    auto* indicator = box->property("indicator").value<QQuickItem*>();
    if (!content || !indicator) return QStringLiteral("a box without its content or indicator");
    const QString name = box->objectName();
    const QString text = box->property("displayText").toString();
    if (content->property("truncated").toBool()) return QStringLiteral("%1: '%2' is elided").arg(name, text);
    const qreal width =
        content->width() - content->property("leftPadding").toReal() - content->property("rightPadding").toReal();
    const qreal height =
        content->height() - content->property("topPadding").toReal() - content->property("bottomPadding").toReal();
    const qreal needsWidth = content->property("contentWidth").toReal();
    const qreal needsHeight = content->property("contentHeight").toReal();
    if (needsWidth > width + 0.5 || needsHeight > height + 0.5)
        return QStringLiteral("%1: '%2' needs %3 x %4 px, the box has %5 x %6")
            .arg(name, text)
            .arg(needsWidth)
            .arg(needsHeight)
            .arg(width)
            .arg(height);
    const qreal textEnd = sceneRect(content).right() - content->property("rightPadding").toReal();
    if (indicator->isVisible() && textEnd > sceneRect(indicator).left() + 0.5)
        return QStringLiteral("%1: the text ends at %2, under the indicator at %3")
            .arg(name)
            .arg(textEnd)
            .arg(sceneRect(indicator).left());
    return {};
}

} // namespace

void TestLayout::settingsSwitchPages() {
    SeededApp seeded(QSize(1000, 700));
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    openSettings(seeded);
    if (QTest::currentTestFailed()) return;

    const QStringList& pages = kSettingsPages;
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
    // Shown again, the theme box still shows its whole text.
    const QString cut = choiceCutShort(findItem(window, QStringLiteral("themeBox")));
    QVERIFY2(cut.isEmpty(), qPrintable(cut));
}

void TestLayout::settingsChoicesFitWhenFirstShown_data() {
    QTest::addColumn<int>("page");
    QTest::addColumn<QString>("pageName");
    QTest::addColumn<QSize>("windowSize");
    const QStringList& pages = kSettingsPages;
    for (int n = 0; n < pages.size(); ++n) QTest::newRow(qPrintable(pages[n])) << n << pages[n] << QSize(1000, 700);
    // The narrowest window (Main.qml's minimum): the long choices (the Device box's
    // "Automatic (...)", the KV cache types) wrap.
    for (int n : {0, 2, 4})
        QTest::newRow(qPrintable(pages[n] + QStringLiteral(" narrow"))) << n << pages[n] << QSize(640, 420);
}

// Each page the first one shown after the settings window opens, in a fresh window: a
// box's width must not stay what it was before its style had laid it out (Material adds
// the drop indicator's room only once the box is shown).
void TestLayout::settingsChoicesFitWhenFirstShown() {
    QFETCH(int, page);
    QFETCH(QString, pageName);
    QFETCH(QSize, windowSize);
    SeededApp seeded(windowSize);
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = seeded.window();
    openSettings(seeded);
    if (QTest::currentTestFailed()) return;
    const QList<QQuickItem*> buttons = visibleItems(window, QStringLiteral("settingsPageButton"));
    QVERIFY(page < buttons.size());
    click(window, buttons[page]);
    QTRY_COMPARE(visibleItems(window, pageName).size(), 1);
    QQuickItem* shownPage = visibleItems(window, pageName).front();
    QList<QQuickItem*> boxes;
    collectChoiceBoxes(shownPage, boxes);
    if (pageName == QStringLiteral("appearanceSettingsPage") || pageName == QStringLiteral("storageSettingsPage") ||
        pageName == QStringLiteral("modelSettingsPage"))
        QVERIFY2(!boxes.isEmpty(), "the page shows no choice box");
    // Time for the page to settle: what is wrong after this stays wrong until the page is
    // shown again.
    QTest::qWait(300);
    for (QQuickItem* box : boxes) {
        const QString cut = choiceCutShort(box);
        QVERIFY2(cut.isEmpty(), qPrintable(cut));
        QVERIFY2(sceneRect(box).right() <= sceneRect(shownPage).right() + 0.5,
                 qPrintable(QStringLiteral("%1 ends at %2, past the page at %3")
                                .arg(box->objectName())
                                .arg(sceneRect(box).right())
                                .arg(sceneRect(shownPage).right())));
    }
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
