// A reply's reasoning told apart from its answer (reply_reasoning.h): whole replies of each
// kind, and every prefix of them as a streaming reply shows it, character by character, so
// markers arrive cut at every place.
#include "reply_reasoning.h"

#include <QtTest>

using arbor::app::ReplyParts;
using arbor::app::splitReasoning;
using namespace Qt::StringLiterals;

namespace {

const QString kThink = QStringLiteral("<think>\nThe user asks for 2 + 2. That is 4.\n</think>\n\nIt is **4**.");
const QString kHarmony = QStringLiteral(
    "<|channel|>analysis<|message|>The user asks for 2 + 2. Simple.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is **4**.");

} // namespace

class TestReplyReasoning : public QObject {
    Q_OBJECT

    // Every prefix of `text`, streaming, shows parts of the whole reply's parts: no marker
    // or part of one ever shows. `openFrom`..`openTo`: the prefix lengths at which the
    // reasoning is open (the reply is inside it).
    static void checkPrefixes(const QString& text, qsizetype openFrom, qsizetype openTo) {
        const ReplyParts whole = splitReasoning(text, false);
        QString lastAnswer;
        for (qsizetype n = 0; n <= text.size(); ++n) {
            const ReplyParts p = splitReasoning(QStringView(text).first(n), true);
            const QString at = QStringLiteral("prefix %1: \"%2\"").arg(n).arg(text.left(n));
            QVERIFY2(p.answer.isEmpty() || whole.answer.startsWith(p.answer), qPrintable(at + " answer " + p.answer));
            QVERIFY2(p.reasoning.isEmpty() || whole.reasoning.startsWith(p.reasoning), qPrintable(at + " reasoning " + p.reasoning));
            QVERIFY2(lastAnswer.isEmpty() || p.answer.startsWith(lastAnswer), qPrintable(at + " answer shrank: " + p.answer));
            QVERIFY2(p.reasoningOpen == (n >= openFrom && n < openTo), qPrintable(at + " open"));
            lastAnswer = p.answer;
        }
    }

private slots:
    void textWithoutMarkersIsAllAnswer() {
        const QString text = QStringLiteral("Compare with `a < b` and <b>bold</b>, then <think about it>.");
        const ReplyParts whole = splitReasoning(text, false);
        QCOMPARE(whole.answer, text);
        QVERIFY(whole.reasoning.isEmpty());
        QVERIFY(!whole.reasoningOpen);
        checkPrefixes(text, 1, 0);
        // A lone "<" is shown once the reply is finished (held back only while it may grow).
        QCOMPARE(splitReasoning(u"<", false).answer, QStringLiteral("<"));
        QCOMPARE(splitReasoning(u"<", true).answer, QString());
        QCOMPARE(splitReasoning(u"", true).answer, QString());
    }

    void thinkReasoningComesFirst() {
        const ReplyParts whole = splitReasoning(kThink, false);
        QCOMPARE(whole.reasoning, QStringLiteral("The user asks for 2 + 2. That is 4."));
        QCOMPARE(whole.answer, QStringLiteral("It is **4**."));
        QVERIFY(!whole.reasoningOpen);
        checkPrefixes(kThink, QStringLiteral("<think>").size(), kThink.indexOf(u"</think>") + 8);
    }

    void thinkAfterWhitespace() {
        const QString text = QStringLiteral("\n  ") + kThink;
        const ReplyParts whole = splitReasoning(text, false);
        QCOMPARE(whole.reasoning, QStringLiteral("The user asks for 2 + 2. That is 4."));
        QCOMPARE(whole.answer, QStringLiteral("It is **4**."));
        checkPrefixes(text, 3 + 7, text.indexOf(u"</think>") + 8);
    }

    // The template's generation prompt opened <think>: the reply only closes it.
    void thinkOpenedByThePrompt() {
        const ReplyParts whole = splitReasoning(u"Okay, 2 + 2 is 4.\n</think>\n\nIt is 4.", false);
        QCOMPARE(whole.reasoning, QStringLiteral("Okay, 2 + 2 is 4."));
        QCOMPARE(whole.answer, QStringLiteral("It is 4."));
        // Until the closing tag comes, nothing tells it from an answer.
        QCOMPARE(splitReasoning(u"Okay, 2 + 2 is 4.\n</thi", true).answer, QStringLiteral("Okay, 2 + 2 is 4.\n"));
    }

    void emptyAndUnfinishedReasoning() {
        const ReplyParts empty = splitReasoning(u"<think>\n\n</think>\n\nHello!", false);
        QVERIFY(empty.reasoning.isEmpty());
        QCOMPARE(empty.answer, QStringLiteral("Hello!"));
        // Stopped (max tokens) while reasoning: reasoning only, no longer open.
        const ReplyParts cut = splitReasoning(u"<think>Let me see", false);
        QCOMPARE(cut.reasoning, QStringLiteral("Let me see"));
        QVERIFY(cut.answer.isEmpty());
        QVERIFY(!cut.reasoningOpen);
        QVERIFY(splitReasoning(u"<think>Let me see", true).reasoningOpen);
    }

    // Tags in the middle of a reply are talk about tags.
    void tagsInsideTheAnswerStay() {
        const QString text = QStringLiteral("Qwen3 writes <think> and then </think> around its reasoning.");
        QCOMPARE(splitReasoning(text, false).answer, text);
        QVERIFY(splitReasoning(text, false).reasoning.isEmpty());
    }

    void harmonyAnalysisThenFinal() {
        const ReplyParts whole = splitReasoning(kHarmony, false);
        QCOMPARE(whole.reasoning, QStringLiteral("The user asks for 2 + 2. Simple."));
        QCOMPARE(whole.answer, QStringLiteral("It is **4**."));
        QVERIFY(!whole.reasoningOpen);
        // Open from when the header names a channel that cannot become "final" ("a") until
        // the analysis message's <|end|> is complete.
        checkPrefixes(kHarmony, QStringLiteral("<|channel|>a").size(), kHarmony.indexOf(u"<|end|>") + 7);
    }

    // Commentary (tool calls) and several analysis messages are reasoning too.
    void harmonyCommentaryIsReasoning() {
        const QString text = QStringLiteral(
            "<|channel|>analysis<|message|>Need the weather.<|end|>"
            "<|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|end|>"
            "<|start|>assistant<|channel|>analysis<|message|>It is sunny.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Sunny in Oslo.");
        const ReplyParts whole = splitReasoning(text, false);
        QCOMPARE(whole.reasoning, QStringLiteral("Need the weather.\n\n{\"city\":\"Oslo\"}\n\nIt is sunny."));
        QCOMPARE(whole.answer, QStringLiteral("Sunny in Oslo."));
        const qsizetype lastEnd = text.lastIndexOf(u"<|end|>") + 7;
        const ReplyParts between = splitReasoning(QStringView(text).first(lastEnd + 9), true);  // "<|start|>"
        QVERIFY(!between.reasoningOpen);
        QVERIFY(splitReasoning(QStringView(text).first(text.indexOf(u"{")), true).reasoningOpen);
    }

    void harmonyFinalOnly() {
        const ReplyParts p = splitReasoning(u"<|channel|>final<|message|>Hi there.", false);
        QVERIFY(p.reasoning.isEmpty());
        QCOMPARE(p.answer, QStringLiteral("Hi there."));
        QVERIFY(!splitReasoning(u"<|channel|>fin", true).reasoningOpen);
    }

    // A live reply's parts kept piece by piece (LiveReplyParts) are the whole text's split
    // after every piece, and say what changed as comparing the two splits would: replies of
    // each kind, long, in pieces of 1 to 9 characters (markers cut anywhere).
    void liveRepliesFollowTheWholeTextSplit_data() {
        QTest::addColumn<QString>("text");
        const QString reasoning = QStringLiteral("Let me see: café, 日本語, a < b.\n\n").repeated(200);
        const QString answer = QStringLiteral("It is **4** (naïve </th guess).\n").repeated(200);
        QTest::newRow("think") << u"<think>\n"_s + reasoning + u"</think>\n\n"_s + answer;
        QTest::newRow("only closes think") << reasoning + u"</think>\n\n"_s + answer;
        QTest::newRow("harmony") << u"<|channel|>analysis<|message|>"_s + reasoning +
                                        u"<|end|><|start|>assistant<|channel|>final<|message|>"_s + answer;
        QTest::newRow("no markers") << answer;
    }
    void liveRepliesFollowTheWholeTextSplit() {
        QFETCH(QString, text);
        arbor::app::LiveReplyParts live;
        ReplyParts before;
        for (qsizetype at = 0, n = 1; at < text.size(); at += n, n = n % 9 + 1) {
            n = std::min(n, text.size() - at);
            const arbor::app::PartsChange change = live.add(QStringView(text).sliced(at, n));
            const ReplyParts want = splitReasoning(QStringView(text).first(at + n), true);
            const QByteArray where = "after " + QByteArray::number(at + n) + " characters";
            QVERIFY2(live.parts().reasoning == want.reasoning && live.parts().answer == want.answer &&
                         live.parts().reasoningOpen == want.reasoningOpen,
                     where);
            const arbor::app::PartsChange compared = arbor::app::partsChange(before, want);
            QVERIFY2(change.reasoning == compared.reasoning && change.reasoningOpen == compared.reasoningOpen &&
                         change.answer == compared.answer && change.answerGrewFrom == compared.answerGrewFrom,
                     where);
            QCOMPARE(live.textSize(), at + n);
            before = want;
        }
    }
};

QTEST_APPLESS_MAIN(TestReplyReasoning)
#include "test_reply_reasoning.moc"
