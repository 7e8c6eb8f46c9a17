// The settings dialogs in the real window (offscreen) with the default model: a refused
// field is marked with its reason while Save stays disabled and nothing typed is lost;
// the new sampler settings (min-p, repetition penalty, seed, stop strings) reach the
// store and the engine (a seeded reply is repeatable); the app's default system prompt
// and its presets are kept across a restart and go in front of a conversation that has
// no system prompt of its own.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QtTest>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::replaceText;
using arbor::test::startWithModel;
using arbor::test::typeAndSend;

namespace {

// Sends `text` and waits for the reply; returns its message id (0 when it did not finish).
qint64 replyTo(QQuickWindow* window, ChatSession* session, const std::function<void()>& start) {
    QSignalSpy finished(session, &ChatSession::replyFinished);
    start();
    if (!QTest::qWaitFor([&] { return !finished.isEmpty(); }, 180000)) return 0;
    Q_UNUSED(window);
    return finished.front().front().toLongLong();
}

} // namespace

class TestSettingsDialogs : public QObject {
    Q_OBJECT
private slots:
    void invalidFieldIsMarkedAndNothingIsLost();
    void defaultSystemPromptAndPresets();
};

void TestSettingsDialogs::invalidFieldIsMarkedAndNothingIsLost() {
    ARBOR_REQUIRE_MODEL();
    arbor::test::FreshApp fresh;
    startWithModel(fresh);
    if (QTest::currentTestFailed()) return;
    QQuickWindow* window = fresh.window;
    QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
    QTRY_VERIFY(fresh.app.tabs()->current());
    ChatSession* session = fresh.app.tabs()->current();

    click(window, findItem(window, QStringLiteral("conversationSettingsButton")));
    QObject* dialog = fresh.engine.rootObjects().front()->findChild<QObject*>(QStringLiteral("conversationSettingsDialog"));
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->property("opened").toBool());
    QQuickItem* save = findItem(window, QStringLiteral("saveSettingsButton"));
    QQuickItem* problem = findItem(window, QStringLiteral("temperatureProblem"));
    QVERIFY(save && problem);
    QVERIFY(save->isEnabled());
    QVERIFY(!problem->isVisible());

    replaceText(window, findItem(window, QStringLiteral("systemPromptField")), QStringLiteral("You are a pirate."));
    replaceText(window, findItem(window, QStringLiteral("temperatureField")), QStringLiteral("abc"));
    QTRY_VERIFY(problem->isVisible());
    QCOMPARE(problem->property("text").toString(), QStringLiteral("Temperature must be a number from 0 to 2"));
    QVERIFY(!save->isEnabled());
    replaceText(window, findItem(window, QStringLiteral("seedField")), QStringLiteral("-3"));
    QQuickItem* seedProblem = findItem(window, QStringLiteral("seedProblem"));
    QTRY_VERIFY(seedProblem->isVisible());
    QVERIFY2(seedProblem->property("text").toString().startsWith(QStringLiteral("Seed must be a number from 0 to")),
             qPrintable(seedProblem->property("text").toString()));
    QTest::qWait(100);
    QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-settings-invalid.png")));

    // A click on the disabled Save changes nothing and keeps the dialog and what was typed.
    click(window, save);
    QTest::qWait(200);
    QVERIFY(dialog->property("opened").toBool());
    QCOMPARE(session->systemPrompt(), QString());
    QCOMPARE(findItem(window, QStringLiteral("systemPromptField"))->property("text").toString(),
             QStringLiteral("You are a pirate."));
    QCOMPARE(findItem(window, QStringLiteral("temperatureField"))->property("text").toString(), QStringLiteral("abc"));

    // Corrected, every field is accepted and saved.
    replaceText(window, findItem(window, QStringLiteral("temperatureField")), QStringLiteral("1.5"));
    replaceText(window, findItem(window, QStringLiteral("seedField")), QStringLiteral("42"));
    replaceText(window, findItem(window, QStringLiteral("minPField")), QStringLiteral("0.1"));
    replaceText(window, findItem(window, QStringLiteral("repetitionPenaltyField")), QStringLiteral("1.1"));
    replaceText(window, findItem(window, QStringLiteral("maxTokensField")), QStringLiteral("16"));
    replaceText(window, findItem(window, QStringLiteral("stopStringsField")), QStringLiteral("\\n\\nUser:"));
    QTRY_VERIFY(save->isEnabled());
    QVERIFY(!problem->isVisible());
    click(window, save);
    QTRY_VERIFY(!dialog->property("opened").toBool());
    QCOMPARE(session->systemPrompt(), QStringLiteral("You are a pirate."));
    QCOMPARE(session->temperature().toDouble(), 1.5);
    QCOMPARE(session->seed().toLongLong(), 42);
    QCOMPARE(session->stopStrings(), QStringLiteral("\\n\\nUser:"));
    const arbor::ConversationSettings expected{"You are a pirate.", 1.5, {}, {}, 16, 1.1, 0.1, 42, {"\n\nUser:"}};
    QTRY_VERIFY(arbor::Store(fresh.path()).conversation_settings(session->conversationId()) == expected);

    // The seed reaches the sampler: at temperature 1.5 a reply and its regeneration are
    // the same only because both draw from seed 42.
    // Closing the dialog gives the composer the keyboard back.
    const qint64 first = replyTo(window, session, [&] { typeAndSend(window, QStringLiteral("Tell me a story.")); });
    QVERIFY(first != 0);
    const qint64 second = replyTo(window, session, [&] { QVERIFY(session->regenerate(1)); });
    QVERIFY(second != 0 && second != first);
    arbor::Store store(fresh.path());
    QVERIFY(!store.message(first).token_ids.empty());
    QCOMPARE(store.message(second).token_ids, store.message(first).token_ids);
    QCOMPARE(store.message(second).text, store.message(first).text);
}

void TestSettingsDialogs::defaultSystemPromptAndPresets() {
    ARBOR_REQUIRE_MODEL();
    arbor::test::TemporaryDatabase db;
    const QString prompt = QStringLiteral("Answer in French.");
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        QQuickWindow* window = running.window;
        QTest::keyClick(window, Qt::Key_Comma, Qt::ControlModifier);  // Ctrl+, opens the settings
        QTRY_COMPARE(arbor::test::visibleItems(window, QStringLiteral("settingsPageButton")).size(), 5);
        click(window, arbor::test::visibleItems(window, QStringLiteral("settingsPageButton"))[1]);  // Chat
        QQuickItem* defaultField = findItem(window, QStringLiteral("defaultSystemPromptField"));
        QVERIFY(defaultField);
        QTRY_VERIFY(defaultField->isVisible());
        replaceText(window, defaultField, prompt);
        QCOMPARE(running.app.settings()->defaultSystemPrompt(), prompt);

        QQuickItem* name = findItem(window, QStringLiteral("presetNameField"));
        QQuickItem* savePreset = findItem(window, QStringLiteral("savePresetButton"));
        QQuickItem* nameProblem = findItem(window, QStringLiteral("presetNameProblem"));
        QVERIFY(name && savePreset && nameProblem);
        QVERIFY(!savePreset->isEnabled());  // no name yet
        replaceText(window, name, QString(80, QLatin1Char('x')));
        QTRY_VERIFY(nameProblem->isVisible());
        QVERIFY(!savePreset->isEnabled());
        replaceText(window, name, QStringLiteral("French"));
        QTRY_VERIFY(savePreset->isEnabled());
        QVERIFY(!nameProblem->isVisible());
        click(window, savePreset);
        const QVariantList presets = running.app.settings()->systemPromptPresets();
        QCOMPARE(presets.size(), 1);
        QCOMPARE(presets[0].toMap().value("name").toString(), QStringLiteral("French"));
        QCOMPARE(presets[0].toMap().value("text").toString(), prompt);
        QTest::keyClick(window, Qt::Key_Escape);
    }
    // After a restart both are back, and a new conversation's prompt starts with the default.
    arbor::test::AppWindow running(db.path());
    startWithModel(running);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(running.app.settings()->defaultSystemPrompt(), prompt);
    QCOMPARE(running.app.settings()->systemPromptPresets().size(), 1);
    QTest::keyClick(running.window, Qt::Key_N, Qt::ControlModifier);
    QTRY_VERIFY(running.app.tabs()->current());
    ChatSession* session = running.app.tabs()->current();
    QVERIFY(session->saveSettings({{"maxTokens", 4}}).isEmpty());
    const QString question = QStringLiteral("Hello");
    const qint64 id = replyTo(running.window, session, [&] { typeAndSend(running.window, question); });
    QVERIFY(id != 0);
    const auto model = running.app.model()->current();
    const arbor::ChatFormatter& f = *model->formatter;
    const auto expected = f.compose({{arbor::Role::System, f.encode_content(prompt.toStdString())},
                                     {arbor::Role::User, f.encode_content(question.toStdString())}});
    QCOMPARE(arbor::Store(db.path()).message(id).stats.prompt_tokens, std::optional<int>(int(expected.size())));
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestSettingsDialogs>(argc, argv); }

#include "test_settings_dialogs.moc"
