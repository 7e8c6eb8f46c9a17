// The model picker in the window's header, through the real window (offscreen), over a
// models folder of its own holding two real (random-weight) models from tests/data/
// synthetic, qwen2-tiny and qwen3-tiny, and a file the engine cannot use: the picker
// lists them (the unusable one greyed, with its reason), switches with a progress
// indicator, records in SQLite the model each conversation used, and asks before a
// conversation goes on with another model than its own. A switch to a file that cannot
// be loaded keeps the model in use.
#include "model_test_files.h"
#include "window_test_support.h"

#include "../model/synthetic_model_files.h"

#include "arbor/store.h"

#include <QDir>
#include <QFile>
#include <QSignalSpy>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

namespace {

constexpr int kLoadMs = 60000;

QString synthetic(const char* name) {
    return QString::fromStdString((arbor::test::test_data_dir() / "synthetic" / name).string());
}

// A models folder under a temporary XDG_DATA_HOME, with copies of the two models.
struct ModelsFolder {
    QTemporaryDir data;
    arbor::test::ScopedEnv xdg{"XDG_DATA_HOME", data.path().toUtf8()};
    QString dir = data.path() + "/arbor/models";
    QString qwen2 = dir + "/qwen2-tiny.gguf";
    QString qwen3 = dir + "/qwen3-tiny.gguf";

    bool fill() {
        return QDir().mkpath(dir) && QFile::copy(synthetic("qwen2-tiny.gguf"), qwen2) &&
               QFile::copy(synthetic("qwen3-tiny.gguf"), qwen3);
    }
};

QString textOf(QQuickWindow* window, const char* objectName) {
    QQuickItem* item = findItem(window, QString::fromLatin1(objectName));
    return item ? item->property("text").toString() : QStringLiteral("<no %1>").arg(objectName);
}

// What the model picker shows: the model's name, then its architecture and quantization
// ("qwen2-tiny · qwen2 · F16") where a local model is loaded.
QString pickerText(QQuickWindow* window) {
    QQuickItem* details = findItem(window, QStringLiteral("modelPickerDetails"));
    const QString name = textOf(window, "modelPickerText");
    return details && details->isVisible() ? name + QLatin1Char(' ') + details->property("text").toString() : name;
}

// Sends `text` in the current tab and waits for the reply to finish.
void sendAndWait(arbor::test::AppWindow& running, const QString& text) {
    ChatSession* session = running.app.tabs()->current();
    QVERIFY(session);
    const int rows = session->messages()->rowCount();
    click(running.window, findItem(running.window, QStringLiteral("composerInput")));
    arbor::test::typeAndSend(running.window, text);
    QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == rows + 2, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(!session->generating(), kLoadMs);
}

void openPicker(QQuickWindow* window) {
    if (visibleItems(window, QStringLiteral("modelPickerModels")).isEmpty())
        click(window, findItem(window, QStringLiteral("modelPicker")));
    QTRY_COMPARE(visibleItems(window, QStringLiteral("modelPickerModels")).size(), 1);
}

// The picker's entry of the file `fileName`.
QQuickItem* entryFor(QQuickWindow* window, const QString& fileName) {
    for (QQuickItem* entry : visibleItems(window, QStringLiteral("modelPickerEntry")))
        if (entry->property("fileName").toString() == fileName) return entry;
    return nullptr;
}

QString noticeTextOf(QQuickItem* bar) {
    return arbor::test::itemsNamed(bar, QStringLiteral("noticeText")).front()->property("text").toString();
}

bool promptShown(QQuickWindow* window) {
    const QList<QQuickItem*> shown = visibleItems(window, QStringLiteral("modelSwitchText"));
    return !shown.isEmpty();
}

} // namespace

class TestModelPickerWindow : public QObject {
    Q_OBJECT
private slots:
    void switchesModelsAndAsksPerConversation() {
        ModelsFolder models;
        QVERIFY(models.fill());
        {
            QFile broken(models.dir + "/broken.gguf");
            QVERIFY(broken.open(QIODevice::WriteOnly));
            broken.write("GGUF\x03\x00\x00\x00 not a model");
        }
        const arbor::test::TemporaryDatabase db;
        qint64 first = 0, second = 0;
        {
            arbor::test::AppWindow running(db.path());
            QVERIFY(running.window);
            QQuickWindow* window = running.window;
            window->resize(1100, 760);
            running.app.start(models.qwen2);
            QVERIFY(QTest::qWaitForWindowExposed(window));
            QTRY_VERIFY_WITH_TIMEOUT(running.app.started() && running.app.model()->ready(), kLoadMs);
            QTRY_COMPARE(pickerText(window), QStringLiteral("qwen2-tiny · qwen2 · F16"));
            QVERIFY(!findItem(window, QStringLiteral("modelPickerBusy"))->isVisible());

            // The first conversation answers with qwen2-tiny.
            running.app.tabs()->newConversation();
            QTRY_VERIFY(running.app.tabs()->current());
            sendAndWait(running, QStringLiteral("Hello"));
            first = running.app.tabs()->current()->conversationId();
            QCOMPARE(running.app.tabs()->current()->modelPath(), models.qwen2);

            // The picker lists the library: both models, and the broken file greyed with why.
            running.app.tabs()->newConversation();
            QTRY_VERIFY(running.app.tabs()->current() && running.app.tabs()->current()->conversationId() != first);
            second = running.app.tabs()->current()->conversationId();
            openPicker(window);
            if (QTest::currentTestFailed()) return;
            QTRY_COMPARE(visibleItems(window, QStringLiteral("modelPickerEntry")).size(), 3);
            QQuickItem* broken = entryFor(window, QStringLiteral("broken.gguf"));
            QVERIFY(broken);
            QVERIFY(!broken->isEnabled());
            const QString reason = arbor::test::itemsNamed(broken, QStringLiteral("modelPickerEntryDetails"))
                                       .front()->property("text").toString();
            QVERIFY2(reason.contains("not supported"), qPrintable(reason));
            QVERIFY(entryFor(window, QStringLiteral("qwen2-tiny.gguf"))->property("highlighted").toBool());
            // Each row names the model, its architecture and quantization, as the button does.
            const auto rowText = [&](const QString& fileName) {
                return arbor::test::itemsNamed(entryFor(window, fileName), QStringLiteral("modelPickerEntryName"))
                    .front()->property("text").toString();
            };
            QCOMPARE(rowText(QStringLiteral("qwen3-tiny.gguf")), QStringLiteral("synthetic tiny f32 seed 3 · qwen3 · F32"));
            QCOMPARE(rowText(QStringLiteral("qwen2-tiny.gguf")), QStringLiteral("qwen2-tiny · qwen2 · F16  (in use)"));
            QVERIFY(visibleItems(window, QStringLiteral("modelPickerLibrary")).size() == 1);

            // Switching: the busy indicator and the load's progress bar show, then the new name.
            QQuickItem* busy = findItem(window, QStringLiteral("modelPickerBusy"));
            QQuickItem* progress = findItem(window, QStringLiteral("modelProgress"));
            QVERIFY(busy && progress);
            bool busyShown = false, progressShown = false;
            connect(busy, &QQuickItem::visibleChanged, this, [&] { busyShown |= busy->isVisible(); });
            connect(progress, &QQuickItem::visibleChanged, this, [&] { progressShown |= progress->isVisible(); });
            QStringList states;
            connect(running.app.model(), &ModelService::stateChanged, this,
                    [&] { states << running.app.model()->state(); });
            click(window, entryFor(window, QStringLiteral("qwen3-tiny.gguf")));
            QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready() && running.app.model()->path() == models.qwen3, kLoadMs);
            QCOMPARE(states, (QStringList{"loading", "ready"}));
            QVERIFY(busyShown);
            QVERIFY(progressShown);
            QTRY_VERIFY(!busy->isVisible());
            // qwen3-tiny's general.name (the picker shows that, with the file's quantization).
            QTRY_COMPARE(pickerText(window), QStringLiteral("synthetic tiny f32 seed 3 · qwen3 · F32"));
            // In a narrow window the name is cut short, the architecture and quantization stay whole.
            window->resize(420, 760);
            {
                QQuickItem* name = findItem(window, QStringLiteral("modelPickerText"));
                QQuickItem* details = findItem(window, QStringLiteral("modelPickerDetails"));
                QTRY_VERIFY(name->property("truncated").toBool());
                QCOMPARE(details->property("text").toString(), QStringLiteral("· qwen3 · F32"));
                QVERIFY2(details->width() >= details->implicitWidth(),
                         qPrintable(QStringLiteral("%1 < %2").arg(details->width()).arg(details->implicitWidth())));
                QVERIFY(details->mapToScene({details->width(), 0}).x() <= window->width());
            }
            window->resize(1100, 760);
            QTRY_VERIFY(!findItem(window, QStringLiteral("modelPickerText"))->property("truncated").toBool());
            QCOMPARE(running.app.settings()->modelPath(), models.qwen3);
            QVERIFY(!promptShown(window));  // the new conversation had no model of its own

            // The second conversation answers with qwen3-tiny.
            sendAndWait(running, QStringLiteral("Hi"));
            QCOMPARE(running.app.tabs()->current()->modelPath(), models.qwen3);

            // Back on the first conversation: asked before going on with qwen3-tiny; Switch.
            running.app.tabs()->setCurrentIndex(running.app.tabs()->indexOf(first));
            QTRY_VERIFY(promptShown(window));
            const QString question = textOf(window, "modelSwitchText");
            QVERIFY2(question.contains("Hello") && question.contains("qwen2-tiny") && question.contains("qwen3-tiny"),
                     qPrintable(question));
            QCOMPARE(running.app.model()->path(), models.qwen3);  // nothing switched by itself
            click(window, visibleItems(window, QStringLiteral("switchModelButton")).front());
            QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready() && running.app.model()->path() == models.qwen2, kLoadMs);
            QTRY_VERIFY(!promptShown(window));
            QTRY_COMPARE(pickerText(window), QStringLiteral("qwen2-tiny · qwen2 · F16"));

            // The second conversation used qwen3-tiny: asked again; Keep current.
            running.app.tabs()->setCurrentIndex(running.app.tabs()->indexOf(second));
            QTRY_VERIFY(promptShown(window));
            QVERIFY(textOf(window, "modelSwitchText").contains("qwen3-tiny"));
            click(window, visibleItems(window, QStringLiteral("keepModelButton")).front());
            QTRY_VERIFY(!promptShown(window));
            QCOMPARE(running.app.model()->path(), models.qwen2);
            // Asked once: coming back does not ask again.
            running.app.tabs()->setCurrentIndex(running.app.tabs()->indexOf(first));
            running.app.tabs()->setCurrentIndex(running.app.tabs()->indexOf(second));
            QTest::qWait(200);
            QVERIFY(!promptShown(window));
            QCOMPARE(running.app.model()->path(), models.qwen2);
            // Sending with the current model makes it the conversation's.
            sendAndWait(running, QStringLiteral("Again"));
            QCOMPARE(running.app.tabs()->current()->modelPath(), models.qwen2);

            // "Model library..." opens the library.
            openPicker(window);
            if (QTest::currentTestFailed()) return;
            click(window, visibleItems(window, QStringLiteral("modelPickerLibrary")).front());
            QTRY_COMPARE(visibleItems(window, QStringLiteral("modelLibraryPage")).size(), 1);
        }
        // What SQLite holds once the app has closed.
        arbor::Store store(db.path());
        QCOMPARE(QString::fromStdString(store.conversation(first).model), models.qwen2);
        QCOMPARE(QString::fromStdString(store.conversation(second).model), models.qwen2);
    }

    // What the loaded model's file gets wrong shows under the picker once per load, until
    // dismissed: a copy of qwen3-tiny whose chat template raises on system messages (the
    // app falls back to ChatML, which its markers match), and qwen2-tiny, which has no
    // template. qwen3-tiny's own template is used: no warning.
    void showsTheModelsWarningsUntilDismissed() {
        ModelsFolder models;
        QVERIFY(models.fill());
        const QString raising = models.dir + "/qwen3-raising-template.gguf";
        auto parts = arbor::test::Parts::read(models.qwen3.toStdString());
        parts.set("tokenizer.chat_template",
                  arbor::test::gv::str("{% for m in messages %}{% if m.role == 'system' %}"
                                       "{{ raise_exception('System messages are not supported here') }}{% endif %}"
                                       "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                                       "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"));
        parts.write(raising.toStdString());
        const arbor::test::TemporaryDatabase db;
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        QQuickWindow* window = running.window;
        running.app.start(models.qwen3);
        QVERIFY(QTest::qWaitForWindowExposed(window));
        QTRY_VERIFY_WITH_TIMEOUT(running.app.started() && running.app.model()->ready(), kLoadMs);
        QQuickItem* bar = findItem(window, QStringLiteral("modelWarning"));
        QVERIFY(bar);
        QVERIFY(!bar->isVisible());

        running.app.picker()->choose(raising);
        QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready() && running.app.model()->path() == raising, kLoadMs);
        QTRY_VERIFY(bar->isVisible());
        const QString warning = noticeTextOf(bar);
        QVERIFY2(warning.startsWith("synthetic tiny f32 seed 3: the model's chat template could not be used (") &&
                     warning.contains("System messages are not supported here") &&
                     warning.endsWith("), so Arbor uses the ChatML format.") && !warning.contains('\n'),
                 qPrintable(warning));
        // Replies do not repeat it.
        running.app.tabs()->newConversation();
        QTRY_VERIFY(running.app.tabs()->current());
        sendAndWait(running, QStringLiteral("Hello"));
        QVERIFY(running.app.tabs()->current()->error().isEmpty());
        QVERIFY(bar->isVisible());
        QCOMPARE(noticeTextOf(bar), warning);
        // Dismissed, it stays away for this load.
        click(window, arbor::test::itemsNamed(bar, QStringLiteral("noticeDismiss")).front());
        QTRY_VERIFY(!bar->isVisible());
        QVERIFY(running.app.model()->warning().isEmpty());
        sendAndWait(running, QStringLiteral("Again"));
        QVERIFY(!bar->isVisible());

        // Another model's load brings its own.
        running.app.picker()->choose(models.qwen2);
        QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready() && running.app.model()->path() == models.qwen2, kLoadMs);
        QTRY_VERIFY(bar->isVisible());
        QCOMPARE(noticeTextOf(bar), QStringLiteral("qwen2-tiny: the model file has no chat template, so Arbor uses "
                                                   "the ChatML format."));
        running.app.picker()->choose(models.qwen3);
        QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready() && running.app.model()->path() == models.qwen3, kLoadMs);
        QTRY_VERIFY(!bar->isVisible());
    }

    void keepsTheModelInUseWhenAnotherCannotLoad() {
        ModelsFolder models;
        QVERIFY(models.fill());
        // A header the engine accepts over tensors it lacks: it fails only once loading.
        const QString hollow = models.dir + "/hollow.gguf";
        arbor::test::writeGguf(hollow.toStdString(), arbor::test::llamaHeader("Hollow"));
        const QString garbage = models.dir + "/garbage.gguf";
        {
            QFile f(garbage);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("this is not a GGUF file");
        }
        const arbor::test::TemporaryDatabase db;
        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        running.app.start(models.qwen2);
        QVERIFY(QTest::qWaitForWindowExposed(running.window));
        QTRY_VERIFY_WITH_TIMEOUT(running.app.started() && running.app.model()->ready(), kLoadMs);
        QQuickItem* notice = findItem(running.window, QStringLiteral("modelPickerError"));
        QVERIFY(notice);
        QVERIFY(!notice->isVisible());

        // A file that is no model is refused from its header: the model in use stays loaded.
        QSignalSpy unloads(running.app.model(), &ModelService::aboutToUnload);
        running.app.picker()->choose(garbage);
        QTRY_VERIFY(!running.app.picker()->error().isEmpty());
        QVERIFY2(running.app.picker()->error().contains("garbage.gguf"), qPrintable(running.app.picker()->error()));
        QCOMPARE(unloads.size(), 0);
        QVERIFY(running.app.model()->ready());
        QCOMPARE(running.app.model()->path(), models.qwen2);
        QCOMPARE(running.app.settings()->modelPath(), models.qwen2);
        QTRY_VERIFY(notice->isVisible());
        QCOMPARE(arbor::test::itemsNamed(notice, QStringLiteral("noticeText")).front()->property("text").toString(),
                 running.app.picker()->error());

        // One that fails after the model in use was unloaded: that model is loaded again.
        running.app.picker()->choose(hollow);
        QVERIFY(running.app.picker()->error().isEmpty());  // cleared by the new choice
        QTRY_VERIFY_WITH_TIMEOUT(!running.app.picker()->error().isEmpty(), kLoadMs);
        const QString error = running.app.picker()->error();
        QVERIFY2(error.contains("hollow.gguf") && error.contains("qwen2-tiny.gguf is loaded again"), qPrintable(error));
        QCOMPARE(unloads.size(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready(), kLoadMs);
        QCOMPARE(running.app.model()->path(), models.qwen2);
        QCOMPARE(running.app.settings()->modelPath(), models.qwen2);
        QVERIFY(!running.app.picker()->busy());

        // And the conversation goes on with it.
        running.app.tabs()->newConversation();
        QTRY_VERIFY(running.app.tabs()->current());
        sendAndWait(running, QStringLiteral("Still here?"));
        QVERIFY(running.app.tabs()->current()->error().isEmpty());
        running.app.picker()->dismissError();
        QTRY_VERIFY(!notice->isVisible());
    }
};

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestModelPickerWindow>(argc, argv); }

#include "test_model_picker_window.moc"
