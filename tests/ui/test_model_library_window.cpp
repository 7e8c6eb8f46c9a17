// The model library through the real window (offscreen), against a fake Hub on loopback
// (tests/app/fake_hub.h) and a models folder of its own: open the library from the Model
// settings page, list a repository, download a file, see it appear in the library with
// what its header says, use it and chat with it. The file is qwen2-tiny.gguf from
// tests/data/synthetic, a real (random-weight) model the engine runs.
#include "fake_hub.h"
#include "window_test_support.h"

#include <QFile>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::visibleItems;

class TestModelLibraryWindow : public QObject {
    Q_OBJECT
private slots:
    void downloadThenChatWithTheNewModel() {
        QFile model(QString::fromStdString((arbor::test::test_data_dir() / "synthetic" / "qwen2-tiny.gguf").string()));
        QVERIFY(model.open(QIODevice::ReadOnly));
        const QByteArray bytes = model.readAll();
        arbor::test::FakeHub hub;
        hub.addFile("tester/tiny-GGUF", "qwen2-tiny.gguf", bytes);
        const arbor::test::TemporaryDatabase db;
        QTemporaryDir data;
        const arbor::test::ScopedEnv xdg("XDG_DATA_HOME", data.path().toUtf8());
        const arbor::test::ScopedEnv endpoint("HF_ENDPOINT", hub.baseUrl().toString().toUtf8());
        const QString models = data.path() + "/arbor/models";

        arbor::test::AppWindow running(db.path());
        QVERIFY(running.window);
        QQuickWindow* window = running.window;
        window->resize(1100, 800);
        running.app.start(QString::fromStdString((db.path().parent_path() / "no-model.gguf").string()));
        QVERIFY(QTest::qWaitForWindowExposed(window));
        QTRY_VERIFY_WITH_TIMEOUT(running.app.started(), 30000);
        QCOMPARE(running.app.library()->defaultFolder(), models);
        QCOMPARE(running.app.library()->rowCount(), 0);

        QObject* root = running.engine.rootObjects().front();
        QObject* settings = root->findChild<QObject*>(QStringLiteral("settingsDialog"));
        QVERIFY(settings);
        QMetaObject::invokeMethod(settings, "open");
        QTRY_VERIFY(settings->property("opened").toBool());
        settings->setProperty("currentPage", 0);
        QTRY_COMPARE(visibleItems(window, QStringLiteral("openModelLibraryButton")).size(), 1);
        click(window, visibleItems(window, QStringLiteral("openModelLibraryButton")).front());
        QTRY_COMPARE(visibleItems(window, QStringLiteral("modelLibraryPage")).size(), 1);

        arbor::test::replaceText(window, findItem(window, QStringLiteral("repositoryField")), QStringLiteral("tester/tiny-GGUF"));
        click(window, findItem(window, QStringLiteral("listFilesButton")));
        QTRY_COMPARE_WITH_TIMEOUT(visibleItems(window, QStringLiteral("fileDownloadButton")).size(), 1, 10000);
        click(window, visibleItems(window, QStringLiteral("fileDownloadButton")).front());
        QTRY_COMPARE_WITH_TIMEOUT(running.app.library()->rowCount(), 1, 15000);
        QTRY_COMPARE(visibleItems(window, QStringLiteral("libraryRow")).size(), 1);
        QFile downloaded(models + "/qwen2-tiny.gguf");
        QVERIFY(downloaded.open(QIODevice::ReadOnly));
        QCOMPARE(downloaded.readAll(), bytes);
        QVERIFY(!QFile::exists(models + "/qwen2-tiny.gguf.part"));
        const QString details = findItem(window, QStringLiteral("libraryDetails"))->property("text").toString();
        QVERIFY2(details.startsWith("qwen2 · "), qPrintable(details));
        QTRY_VERIFY(visibleItems(window, QStringLiteral("downloadStatus")).size() == 1);
        QCOMPARE(visibleItems(window, QStringLiteral("downloadStatus")).front()->property("text").toString(),
                 QStringLiteral("Downloaded: it is in the library above."));

        click(window, visibleItems(window, QStringLiteral("useModelButton")).front());
        QTRY_VERIFY_WITH_TIMEOUT(running.app.model()->ready(), 30000);
        QCOMPARE(running.app.model()->path(), models + "/qwen2-tiny.gguf");
        QCOMPARE(running.app.settings()->modelPath(), models + "/qwen2-tiny.gguf");

        // Chatting with it: a reply of the new model comes back.
        QObject* library = root->findChild<QObject*>(QStringLiteral("modelLibraryDialog"));
        QMetaObject::invokeMethod(library, "close");
        QMetaObject::invokeMethod(settings, "close");
        QTRY_VERIFY(!settings->property("visible").toBool());
        running.app.tabs()->newConversation();
        QTRY_VERIFY(running.app.tabs()->current());
        ChatSession* session = running.app.tabs()->current();
        click(window, findItem(window, QStringLiteral("composerInput")));
        arbor::test::typeAndSend(window, QStringLiteral("Hello"));
        QTRY_VERIFY_WITH_TIMEOUT(session->messages()->rowCount() == 2, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!session->generating() && !session->messages()->row(1).text.isEmpty(), 60000);
        QCOMPARE(session->messages()->row(0).text, QStringLiteral("Hello"));
    }
};

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestModelLibraryWindow>(argc, argv); }

#include "test_model_library_window.moc"
