// Readable in both themes: the real window shows a conversation (a message of the user, a
// reply with its reasoning expanded, prose, a link and a code block in syntax colours) in
// the dark theme chosen before the start, then light and dark again switched while it
// runs. In each, the window is grabbed and, for every message text, code block and the
// reasoning with its toggle shown, the colours of its text pixels are measured against
// its background: each must reach the WCAG AA contrast for body text, 4.5:1. The same
// holds for every text of the sidebar, of each page of the settings window and of the
// conversation settings dialog, disabled controls (a refused Save) and placeholders
// included, in light and dark, and of the model library. Screenshots:
// build/arbor-theme-<theme>[-<view>].png.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QHash>
#include <QVector3D>
#include <QtTest>

#include <algorithm>
#include <cmath>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

namespace {

constexpr double kMinContrast = 4.5;

// WCAG 2: relative luminance of an sRGB colour, and the contrast ratio of two.
double linear(int channel) {
    const double c = channel / 255.0;
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double luminance(QRgb c) { return 0.2126 * linear(qRed(c)) + 0.7152 * linear(qGreen(c)) + 0.0722 * linear(qBlue(c)); }
double contrast(QRgb a, QRgb b) {
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QString hex(QRgb c) { return QColor(c).name(); }

// The text colours of a region against its background, the region's most common
// colour. Anti-aliased glyph edges blend a text colour into the background, so every
// pixel of one text colour lies on the line from the background towards it. Colours are
// taken farthest from the background first: one that points the same way as an earlier
// one (cosine over 0.97) is a blend of that text colour; one that does not starts a new
// text colour (the solid inside of glyphs, seen on at least 3 pixels). Returns a
// description of every text colour below the minimum contrast, empty when all pass;
// `found` counts them.
QStringList lowContrastColours(const QImage& shot, const QRect& region, int& found) {
    QHash<QRgb, int> counts;
    const QRect r = region.intersected(shot.rect());
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) ++counts[shot.pixel(x, y) | 0xff000000];
    QRgb background = 0;
    int most = 0;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        if (it.value() > most) std::tie(background, most) = std::pair(it.key(), it.value());

    struct Shade {
        QRgb colour;
        int pixels;
        QVector3D offset;  // from the background
    };
    QList<Shade> shades;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it) {
        const QVector3D offset(qRed(it.key()) - qRed(background), qGreen(it.key()) - qGreen(background),
                               qBlue(it.key()) - qBlue(background));
        if (offset.length() >= 32) shades.push_back({it.key(), it.value(), offset});  // else too close to tell
    }
    std::sort(shades.begin(), shades.end(), [](const Shade& a, const Shade& b) { return a.offset.length() > b.offset.length(); });
    struct TextColour {
        Shade solid;
        int pixels = 0;
    };
    QList<TextColour> colours;
    for (const Shade& shade : shades) {
        auto same = std::find_if(colours.begin(), colours.end(), [&](const TextColour& c) {
            return QVector3D::dotProduct(c.solid.offset.normalized(), shade.offset.normalized()) > 0.97f;
        });
        if (same != colours.end()) same->pixels += shade.pixels;
        else if (shade.pixels >= 3) colours.push_back({shade, shade.pixels});
    }
    QStringList low;
    found = 0;
    for (const TextColour& c : colours) {
        if (c.pixels < 30) continue;  // a stray pixel or two, not text
        ++found;
        const double ratio = contrast(c.solid.colour, background);
        if (ratio < kMinContrast)
            low << QStringLiteral("%1 on %2: %3:1 (%4 pixels of that colour)")
                       .arg(hex(c.solid.colour), hex(background))
                       .arg(ratio, 0, 'f', 2)
                       .arg(c.pixels);
    }
    return low;
}

// Every message text and code block in view passes; they are all there to be measured.
void checkContrast(QQuickWindow* window, const QString& theme) {
    QTest::qWait(200);  // let the last frame render
    const QImage shot = window->grabWindow();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-theme-%1.png").arg(theme)));
    int measured = 0;
    for (const QString& name : {QStringLiteral("userText"), QStringLiteral("markdownText"), QStringLiteral("codeText"),
                                QStringLiteral("reasoningToggle"), QStringLiteral("reasoningText")}) {
        const QList<QQuickItem*> items = visibleItems(window, name);
        QVERIFY2(!items.isEmpty(), qPrintable(name + " is not shown"));
        for (QQuickItem* item : items) {
            const QRect region = item->mapRectToScene(item->boundingRect()).toAlignedRect();
            int colours = 0;
            const QStringList low = lowContrastColours(shot, region, colours);
            QVERIFY2(colours > 0, qPrintable(QStringLiteral("%1: no text found in %2 (%3)")
                                                 .arg(theme, name, item->property("text").toString().left(40))));
            QVERIFY2(low.isEmpty(), qPrintable(QStringLiteral("%1, %2 \"%3\": %4")
                                                   .arg(theme, name, item->property("text").toString().left(40),
                                                        low.join(QStringLiteral("; ")))));
            ++measured;
        }
    }
    QVERIFY(measured >= 6);  // the user's text, two paragraphs, the code, the reasoning and its toggle
}

// Where a text item draws its text, in the scene: inside its padding (a text field's
// boundingRect() leaves out its top padding, and below the bottom one lies its underline).
QRectF textArea(const QQuickItem* item) {
    auto padding = [&](const char* side) { return item->property(side).toReal(); };
    const QRectF inside(padding("leftPadding"), padding("topPadding"),
                        item->width() - padding("leftPadding") - padding("rightPadding"),
                        item->height() - padding("topPadding") - padding("bottomPadding"));
    return item->mapRectToScene(inside);
}

bool isText(const QQuickItem* item) {
    return item->inherits("QQuickText") || item->inherits("QQuickTextEdit") || item->inherits("QQuickTextInput");
}

// Every text item shown below `root` that lies inside `root`'s rect (not scrolled out of
// view) and has text.
void collectTexts(QQuickItem* item, const QRectF& within, QList<QQuickItem*>& out) {
    if (!item->isVisible() || item->opacity() <= 0) return;
    if (isText(item) && !item->property("text").toString().trimmed().isEmpty()) {
        const QRectF r = textArea(item);
        if (r.width() >= 4 && r.height() >= 4 && within.contains(r)) out << item;
    }
    for (QQuickItem* child : item->childItems()) collectTexts(child, within, out);
}

// Every text shown in `root` passes; returns how many had text pixels to measure (a
// single small glyph may have too few).
int checkTextsIn(QQuickWindow* window, QQuickItem* root, const QString& view) {
    QTest::qWait(200);  // let the last frame render
    const QImage shot = window->grabWindow();
    if (shot.isNull()) {
        QTest::qFail("the window cannot be grabbed", __FILE__, __LINE__);
        return 0;
    }
    shot.save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-theme-%1.png").arg(view));
    QList<QQuickItem*> texts;
    collectTexts(root, root->mapRectToScene(root->boundingRect()).intersected(QRectF(QPointF(0, 0), window->size())),
                 texts);
    int measured = 0;
    for (QQuickItem* item : texts) {
        int colours = 0;
        const QStringList low =
            lowContrastColours(shot, textArea(item).toAlignedRect(), colours);
        if (!low.isEmpty()) {
            const QRect r = textArea(item).toAlignedRect();
            QTest::qFail(qPrintable(QStringLiteral("%1, %2 at %5,%6 %7x%8 \"%3\": %4")
                                        .arg(view, QString::fromLatin1(item->metaObject()->className()),
                                             item->property("text").toString().left(40), low.join(QStringLiteral("; ")))
                                        .arg(r.x()).arg(r.y()).arg(r.width()).arg(r.height())),
                         __FILE__, __LINE__);
            return measured;
        }
        if (colours > 0) ++measured;
    }
    return measured;
}

// A reply that reasoned first: its reasoning is shown expanded, in the secondary colour.
const char* const kReply =
    "<think>\nThe user wants a short C++ example that lists a folder.\n</think>\n\n"
    "Use `std::filesystem` and read the guide at [the reference page for directory iterators]"
    "(https://en.cppreference.com/w/cpp/filesystem/directory_iterator) when in doubt.\n\n"
    "It prints one name a line, in the order the system gives them:\n\n"
    "```cpp\n"
    "// Lists the files of a directory, one a line, and counts them.\n"
    "// A second comment line, so that comments are measured too.\n"
    "int main() {\n"
    "    int count = 0, limit = 1000, step = 1;\n"
    "    for (auto& entry : std::filesystem::directory_iterator(\"some/folder\"))\n"
    "        std::puts(\"a file name here\"), count += step;\n"
    "    return count > limit ? 1 : 0;\n"
    "}\n"
    "```";

} // namespace

class TestThemeContrast : public QObject {
    Q_OBJECT
private slots:
    void messagesAreReadableInEachTheme();
    void sidebarSettingsAndDialogsAreReadable();
};

void TestThemeContrast::messagesAreReadableInEachTheme() {
    const arbor::test::TemporaryDatabase db;
    {
        arbor::Store store(db.path());
        const auto conversation = store.create_conversation("Listing files");
        const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User,
                                                "How do I list the files of a folder in C++? Show me a short example.", {});
        const auto reply = store.add_message(conversation, question, arbor::Role::Assistant, kReply, {});
        const arbor::OpenTab tab{conversation, reply, true};
        store.save_open_tabs({&tab, 1});
        store.set_app_setting("ui.theme", "dark");  // chosen in an earlier run
    }
    arbor::test::AppWindow running(db.path());
    QVERIFY(running.window);
    running.window->resize(1100, 860);  // the whole conversation in view, the reasoning expanded
    running.app.start(QString::fromStdString((db.path().parent_path() / "no-model.gguf").string()));
    QVERIFY(QTest::qWaitForWindowExposed(running.window));
    QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
    QTRY_COMPARE(running.app.settings()->theme(), QStringLiteral("dark"));
    QTRY_VERIFY(visibleItems(running.window, QStringLiteral("codeText")).size() == 1);
    QTRY_COMPARE(visibleItems(running.window, QStringLiteral("reasoningToggle")).size(), 1);
    click(running.window, visibleItems(running.window, QStringLiteral("reasoningToggle")).front());
    QTRY_COMPARE(visibleItems(running.window, QStringLiteral("reasoningText")).size(), 1);
    checkContrast(running.window, QStringLiteral("dark"));
    if (QTest::currentTestFailed()) return;

    running.app.settings()->setTheme(QStringLiteral("light"));
    checkContrast(running.window, QStringLiteral("light"));
    if (QTest::currentTestFailed()) return;

    running.app.settings()->setTheme(QStringLiteral("dark"));
    checkContrast(running.window, QStringLiteral("dark-again"));
}

void TestThemeContrast::sidebarSettingsAndDialogsAreReadable() {
    const arbor::test::TemporaryDatabase db;
    {
        arbor::Store store(db.path());
        store.create_conversation("Trip ideas for a weekend");
        const auto conversation = store.create_conversation("Listing files");
        const auto question = store.add_message(conversation, std::nullopt, arbor::Role::User,
                                                "How do I list the files of a folder?", {});
        const arbor::OpenTab tab{conversation, question, true};
        store.save_open_tabs({&tab, 1});
    }
    arbor::test::AppWindow running(db.path());
    QVERIFY(running.window);
    QQuickWindow* window = running.window;
    window->resize(1000, 700);
    running.app.start(QString::fromStdString((db.path().parent_path() / "no-model.gguf").string()));
    QVERIFY(QTest::qWaitForWindowExposed(window));
    QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
    QTRY_VERIFY(running.app.tabs()->current());
    QObject* root = running.engine.rootObjects().front();
    QObject* settings = root->findChild<QObject*>(QStringLiteral("settingsDialog"));
    QObject* conversationSettings = root->findChild<QObject*>(QStringLiteral("conversationSettingsDialog"));
    QVERIFY(settings && conversationSettings);
    const QStringList pages{QStringLiteral("modelSettingsPage"), QStringLiteral("chatSettingsPage"),
                            QStringLiteral("appearanceSettingsPage"), QStringLiteral("localApiSettingsPage"),
                            QStringLiteral("storageSettingsPage")};

    for (const QString theme : {QStringLiteral("light"), QStringLiteral("dark")}) {
        running.app.settings()->setTheme(theme);
        const int inSidebar = checkTextsIn(window, findItem(window, QStringLiteral("sidebar")), theme + QStringLiteral("-sidebar"));
        if (QTest::currentTestFailed()) return;
        QVERIFY(inSidebar >= 4);

        // Each page of the settings window; the Chat page has a disabled "Save as preset".
        QMetaObject::invokeMethod(settings, "open");
        QTRY_VERIFY(settings->property("opened").toBool());
        for (qsizetype n = 0; n < pages.size(); ++n) {
            settings->setProperty("currentPage", int(n));
            QTRY_COMPARE(visibleItems(window, pages[n]).size(), 1);
            const int measured = checkTextsIn(window, visibleItems(window, pages[n]).front(),
                                              QStringLiteral("%1-%2").arg(theme, pages[n]));
            if (QTest::currentTestFailed()) return;
            QVERIFY2(measured >= 2, qPrintable(QStringLiteral("%1: %2 texts measured").arg(pages[n]).arg(measured)));
        }
        // The model library with its download panel, opened from the Model page.
        settings->setProperty("currentPage", 0);
        QTRY_COMPARE(visibleItems(window, QStringLiteral("openModelLibraryButton")).size(), 1);
        click(window, visibleItems(window, QStringLiteral("openModelLibraryButton")).front());
        QObject* library = root->findChild<QObject*>(QStringLiteral("modelLibraryDialog"));
        QVERIFY(library);
        QTRY_VERIFY(library->property("opened").toBool());
        QTRY_COMPARE(visibleItems(window, QStringLiteral("modelLibraryPage")).size(), 1);
        const int inLibrary = checkTextsIn(window, visibleItems(window, QStringLiteral("modelLibraryPage")).front(),
                                           theme + QStringLiteral("-model-library"));
        if (QTest::currentTestFailed()) return;
        QVERIFY2(inLibrary >= 4, qPrintable(QStringLiteral("model library: %1 texts measured").arg(inLibrary)));
        QMetaObject::invokeMethod(library, "close");
        QTRY_VERIFY(!library->property("visible").toBool());

        QQuickItem* savePreset = findItem(window, QStringLiteral("savePresetButton"));
        QVERIFY(savePreset && !savePreset->isEnabled());
        QMetaObject::invokeMethod(settings, "close");
        QTRY_VERIFY(!settings->property("visible").toBool());

        // The conversation settings with a refused field: its reason, the disabled Save.
        click(window, findItem(window, QStringLiteral("conversationSettingsButton")));
        QTRY_VERIFY(conversationSettings->property("opened").toBool());
        arbor::test::replaceText(window, findItem(window, QStringLiteral("temperatureField")), QStringLiteral("abc"));
        QQuickItem* save = findItem(window, QStringLiteral("saveSettingsButton"));
        QTRY_VERIFY(!save->isEnabled());
        QTRY_VERIFY(findItem(window, QStringLiteral("temperatureProblem"))->isVisible());
        auto* dialogItem = conversationSettings->property("contentItem").value<QQuickItem*>()->parentItem();
        const int inDialog = checkTextsIn(window, dialogItem, theme + QStringLiteral("-conversation-settings"));
        if (QTest::currentTestFailed()) return;
        QVERIFY(inDialog >= 8);
        const int inSave = checkTextsIn(window, save, theme + QStringLiteral("-disabled-save"));
        if (QTest::currentTestFailed()) return;
        QVERIFY2(inSave == 1, "the disabled Save has no text to measure");
        QMetaObject::invokeMethod(conversationSettings, "reject");
        QTRY_VERIFY(!conversationSettings->property("visible").toBool());
    }
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestThemeContrast>(argc, argv); }

#include "test_theme_contrast.moc"
