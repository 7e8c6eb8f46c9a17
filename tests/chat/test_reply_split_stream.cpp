// A streaming reply split piece by piece (arbor/reply_split_stream.h) gives what splitting
// the whole text so far gives (split_reasoning), at every piece: long replies of each kind
// cut at random places (inside markers and UTF-8 characters too), and random texts made of
// markers, parts of markers and words.
#include "arbor/reply_split_stream.h"

#include <QtTest>

#include <random>
#include <string>
#include <vector>

using arbor::ReplyParts;
using arbor::ReplySplitStream;
using arbor::split_reasoning;

namespace {

// The end of a long string, escaped, for a failure's message.
QByteArray shown(const std::string& s) {
    const std::string tail = s.size() > 80 ? "…" + s.substr(s.size() - 80) : s;
    QByteArray out;
    for (const char c : tail) out += c == '\n' ? QByteArray("\\n") : QByteArray(1, c);
    return out;
}

bool same(const ReplyParts& a, const ReplyParts& b) {
    return a.reasoning == b.reasoning && a.answer == b.answer && a.reasoning_open == b.reasoning_open;
}

QByteArray mismatch(const std::string& text, const ReplyParts& got, const ReplyParts& want) {
    return "after " + QByteArray::number(qsizetype(text.size())) + " bytes ending \"" + shown(text) +
           "\": reasoning \"" + shown(got.reasoning) + "\" (want \"" + shown(want.reasoning) + "\"), answer \"" +
           shown(got.answer) + "\" (want \"" + shown(want.answer) + "\"), open " +
           QByteArray::number(got.reasoning_open) + " (want " + QByteArray::number(want.reasoning_open) + ")";
}

// Below `from` (a Change's offset), `now` is as `before` was.
bool kept_below(const std::string& before, const std::string& now, size_t from) {
    return from <= before.size() && from <= now.size() && now.compare(0, from, before, 0, from) == 0;
}

// Feeds `reply` to a stream the prompt opened with `opened`, in pieces of 1 to `max_piece`
// bytes, and compares with the whole-text split after every piece and once complete.
void feed(const std::string& opened, const std::string& reply, std::mt19937& rng, size_t max_piece) {
    ReplySplitStream stream(opened);
    QVERIFY2(same(stream.parts(), split_reasoning(opened, true)),
             mismatch(opened, stream.parts(), split_reasoning(opened, true)).constData());
    for (size_t at = 0; at < reply.size();) {
        const size_t n = std::min(reply.size() - at, 1 + rng() % max_piece);
        const ReplyParts before = stream.parts();
        const ReplySplitStream::Change change = stream.add(std::string_view(reply).substr(at, n));
        at += n;
        const std::string text = opened + reply.substr(0, at);
        QCOMPARE(stream.text(), text);
        const ReplyParts want = split_reasoning(text, true);
        QVERIFY2(same(stream.parts(), want), mismatch(text, stream.parts(), want).constData());
        QVERIFY(kept_below(before.reasoning, stream.parts().reasoning, change.reasoning_from));
        QVERIFY(kept_below(before.answer, stream.parts().answer, change.answer_from));
    }
    const ReplyParts before = stream.parts();
    const ReplySplitStream::Change change = stream.finish();
    const std::string text = opened + reply;
    const ReplyParts want = split_reasoning(text, false);
    QVERIFY2(same(stream.parts(), want), mismatch(text, stream.parts(), want).constData());
    QVERIFY(kept_below(before.reasoning, stream.parts().reasoning, change.reasoning_from));
    QVERIFY(kept_below(before.answer, stream.parts().answer, change.answer_from));
}

// A long run of prose: words (some not ASCII), blank lines, code, and things that look like
// the start of a marker without being one.
std::string prose(std::mt19937& rng, size_t bytes) {
    static const std::vector<std::string> words = {
        "the", "model", "reasons", "about", "café", "日本語", "x = 2 + 2", "<", "<b>", "</", "</th", "<|", "|>",
        "<|end", "<thi", "final", "think", "\n", "\n\n", "  ", "\t", "{\"a\": 1}", "naïve", "—"};
    std::string out;
    while (out.size() < bytes) {
        out += words[rng() % words.size()];
        out += rng() % 4 ? " " : "";
    }
    return out;
}

} // namespace

class TestReplySplitStream : public QObject {
    Q_OBJECT
private slots:
    // Replies of some thousands of tokens, each kind a model writes, in pieces cut anywhere.
    void longRepliesMatchTheWholeTextSplit_data() {
        QTest::addColumn<QString>("opened");
        QTest::addColumn<QString>("shape");
        QTest::newRow("think tags") << "" << "\n<think>\n%R\n</think>\n\n%A";
        QTest::newRow("prompt opened think (API)") << "<think>" << "\n%R\n</think>\n\n%A";
        QTest::newRow("reply only closes think (app)") << "" << "%R\n</think>\n\n%A";
        QTest::newRow("think never closed") << "" << "<think>%R";
        QTest::newRow("plain answer") << "" << "%A";
        QTest::newRow("tags in the answer") << "" << "%A <think> %R </think> %A";
        QTest::newRow("harmony") << ""
                                 << "<|channel|>analysis<|message|>%R<|end|><|start|>assistant<|channel|>commentary "
                                    "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|end|>"
                                    "<|start|>assistant<|channel|>analysis<|message|>%R<|end|>"
                                    "<|start|>assistant<|channel|>final<|message|>%A<|end|>"
                                    "<|start|>assistant<|channel|>final<|message|>%A";
        QTest::newRow("harmony, no channel named") << "" << "<|start|>assistant<|message|>%A<|end|><|start|>%A";
    }
    void longRepliesMatchTheWholeTextSplit() {
        QFETCH(QString, opened);
        QFETCH(QString, shape);
        std::mt19937 rng(7);
        for (int round = 0; round < 3; ++round) {
            std::string reply;
            const std::string s = shape.toStdString();
            for (size_t i = 0; i < s.size(); ++i) {
                if (s[i] == '%' && i + 1 < s.size() && (s[i + 1] == 'R' || s[i + 1] == 'A')) {
                    reply += prose(rng, 3000);
                    ++i;
                } else {
                    reply += s[i];
                }
            }
            feed(opened.toStdString(), reply, rng, round == 0 ? 1 : 12);
            if (QTest::currentTestFailed()) return;
        }
    }

    // Random texts of markers, parts of markers, channel names, whitespace and words: every
    // order the pieces may come in, the start of a reply (which decides its kind) included.
    void randomMarkupMatchesTheWholeTextSplit() {
        static const std::vector<std::string> fragments = {
            "<think>", "</think>", "<|channel|>", "<|message|>", "<|end|>", "<|start|>", "assistant", "final",
            "analysis", "commentary", " to=functions.f", "<|constrain|>json", "fin", "<thi", "</th", "<|chan", "<|end",
            "<|", "<", ">", "|", "/", " ", "\n", "\n\n", "\t", "word", "é", "日本", "{\"x\": 1}"};
        std::mt19937 rng(11);
        for (int round = 0; round < 4000; ++round) {
            std::string reply;
            const size_t count = 1 + rng() % 40;
            for (size_t i = 0; i < count; ++i) reply += fragments[rng() % fragments.size()];
            feed(round % 3 == 0 ? "<think>" : "", reply, rng, 1 + rng() % 8);
            if (QTest::currentTestFailed()) return;
        }
    }
};

QTEST_APPLESS_MAIN(TestReplySplitStream)
#include "test_reply_split_stream.moc"
