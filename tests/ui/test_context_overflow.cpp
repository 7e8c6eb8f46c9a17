// A conversation that outgrows the model's context, in the real window (offscreen) with
// the default model: the context length is set in the settings (a value over the model's
// trained context is refused with its reason in the field; Apply reloads the model with
// it), replies keep coming past it, the view marks where the model's context begins
// ("N earlier messages are not part of the model's context") above the right message, the
// status bar counts against the new length, and after a restart the length and the mark
// are still there.
#include "test_support.h"
#include "window_test_support.h"

#include "arbor/store.h"

#include <QtTest>

using namespace arbor::app;
using arbor::test::click;
using arbor::test::findItem;
using arbor::test::replaceText;
using arbor::test::startWithModel;
using arbor::test::visibleItems;

namespace {

constexpr int kContext = 512;
constexpr int kWaitMs = 180000;

QString markerText(int count) {
    return QStringLiteral("%1 earlier messages are not part of the model's context").arg(count);
}

// The one marker shown, and the index of the message it stands above (-1 when not one).
std::pair<QString, int> shownMarker(QQuickWindow* window) {
    const QList<QQuickItem*> markers = visibleItems(window, QStringLiteral("omittedTurnsMarker"));
    if (markers.size() != 1) return {QString::number(markers.size()) + QStringLiteral(" markers"), -1};
    // Label -> OmittedTurnsMarker -> MessageBubble
    QQuickItem* bubble = markers.front()->parentItem() ? markers.front()->parentItem()->parentItem() : nullptr;
    return {markers.front()->property("text").toString(), bubble ? bubble->property("index").toInt() : -1};
}

} // namespace

class TestContextOverflow : public QObject {
    Q_OBJECT
private slots:
    void chatPastTheContextLength();
};

void TestContextOverflow::chatPastTheContextLength() {
    ARBOR_REQUIRE_MODEL();
    arbor::test::TemporaryDatabase db;
    int omitted = 0;
    {
        arbor::test::AppWindow running(db.path());
        startWithModel(running);
        if (QTest::currentTestFailed()) return;
        QQuickWindow* window = running.window;
        ArborApp& app = running.app;
        const int trained = app.model()->trainedContext();
        QVERIFY(trained > kContext);
        QVERIFY(app.model()->contextSize() > kContext);

        // The setting: refused over the trained context, then applied.
        QTest::keyClick(window, Qt::Key_Comma, Qt::ControlModifier);
        QQuickItem* field = findItem(window, QStringLiteral("contextLengthField"));
        QQuickItem* problem = findItem(window, QStringLiteral("contextLengthProblem"));
        QQuickItem* apply = findItem(window, QStringLiteral("applyContextLength"));
        QVERIFY(field && problem && apply);
        QTRY_VERIFY(field->isVisible());
        QVERIFY(!apply->isEnabled());  // nothing changed yet
        replaceText(window, field, QString::number(trained + 1));
        QTRY_VERIFY(problem->isVisible());
        QCOMPARE(problem->property("text").toString(),
                 QStringLiteral("Context length must be at most %1 tokens, the context the model was trained with")
                     .arg(trained));
        QVERIFY(!apply->isEnabled());
        replaceText(window, field, QString::number(kContext));
        QTRY_VERIFY(!problem->isVisible());
        QTRY_VERIFY(apply->isEnabled());
        click(window, apply);
        QTRY_VERIFY_WITH_TIMEOUT(app.model()->ready() && app.model()->contextSize() == kContext, 60000);
        QCOMPARE(app.settings()->contextLength(app.model()->path()), kContext);
        QTest::keyClick(window, Qt::Key_Escape);

        QTest::keyClick(window, Qt::Key_N, Qt::ControlModifier);
        QTRY_VERIFY(app.tabs()->current());
        ChatSession* session = app.tabs()->current();
        QVERIFY(session->saveSettings({{"maxTokens", 16}, {"temperature", 0.0}}).isEmpty());
        QQuickItem* input = findItem(window, QStringLiteral("composerInput"));
        QVERIFY(input);
        for (int turn = 0; turn < 16 && session->omittedMessages() == 0; ++turn) {
            QString text = QStringLiteral("Tell me about ship number %1:").arg(turn);
            for (int w = 0; w < 20; ++w) text += QStringLiteral(" mast%1").arg(w);
            QSignalSpy finished(session, &ChatSession::replyFinished);
            QTRY_VERIFY(input->hasActiveFocus());
            input->setProperty("text", text);
            QTest::keyClick(window, Qt::Key_Return);
            QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), kWaitMs);
            QCOMPARE(session->error(), QString());
        }
        omitted = session->omittedMessages();
        QVERIFY2(omitted > 0, "the conversation never outgrew the context");
        QTRY_COMPARE(shownMarker(window), std::make_pair(markerText(omitted), omitted));
        // The status bar counts the last prompt and reply against the new length.
        QVERIFY(session->contextTokens() > 0 && session->contextTokens() <= kContext);
        QCOMPARE(findItem(window, QStringLiteral("statusContext"))->property("text").toString(),
                 QStringLiteral("%1 / %2 tokens").arg(session->contextTokens()).arg(kContext));
        QVERIFY(window->grabWindow().save(QStringLiteral(ARBOR_TEST_BUILD_DIR "/arbor-context-overflow.png")));
    }
    // Restarted: the model gets the same context length, the tab the same mark.
    arbor::test::AppWindow running(db.path());
    startWithModel(running);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(running.app.model()->contextSize(), kContext);
    QTRY_VERIFY(running.app.tabs()->current());
    QTRY_COMPARE(running.app.tabs()->current()->omittedMessages(), omitted);
    QTRY_COMPARE(shownMarker(running.window), std::make_pair(markerText(omitted), omitted));
}

int main(int argc, char** argv) { return arbor::test::runWindowTests<TestContextOverflow>(argc, argv); }

#include "test_context_overflow.moc"
