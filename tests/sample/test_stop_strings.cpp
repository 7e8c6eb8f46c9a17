#include "arbor/stop_strings.h"

#include <QtTest>

using arbor::StopStringMatcher;

namespace {

struct Run {
    std::string shown;  // everything emitted, flush included when not stopped
    bool stopped = false;
    int stopped_at = -1;  // index of the piece that hit the stop string
};

Run feed(StopStringMatcher& m, const std::vector<std::string>& pieces) {
    Run r;
    for (size_t i = 0; i < pieces.size(); ++i) {
        auto res = m.push(pieces[i]);
        r.shown += res.emit;
        if (res.stopped && !r.stopped) r.stopped_at = int(i);
        r.stopped = r.stopped || res.stopped;
    }
    if (!r.stopped) r.shown += m.flush();
    return r;
}

} // namespace

class TestStopStrings : public QObject {
    Q_OBJECT

private slots:
    void noStopEmitsEverything() {
        StopStringMatcher m({"STOP"});
        const auto r = feed(m, {"Hello", ", ", "world", "!"});
        QVERIFY(!r.stopped);
        QCOMPARE(r.shown, std::string("Hello, world!"));
    }

    void noStopStringsAtAll() {
        StopStringMatcher m({});
        auto res = m.push("abc");
        QCOMPARE(res.emit, std::string("abc"));
        QVERIFY(!res.stopped);
        StopStringMatcher empty({""});
        QCOMPARE(empty.push("xyz").emit, std::string("xyz"));
    }

    void stopInsideOnePiece() {
        StopStringMatcher m({"\nUser:"});
        auto res = m.push("Sure thing.\nUser: more");
        QVERIFY(res.stopped);
        QCOMPARE(res.emit, std::string("Sure thing."));
        // Nothing after a stop.
        res = m.push("ignored");
        QVERIFY(res.stopped);
        QVERIFY(res.emit.empty());
        QVERIFY(m.flush().empty());
    }

    void stopSplitAcrossPieces() {
        StopStringMatcher m({"</answer>"});
        auto a = m.push("The result is 4</");
        QCOMPARE(a.emit, std::string("The result is 4"));  // "</" held back
        QVERIFY(!a.stopped);
        auto b = m.push("ans");
        QVERIFY(b.emit.empty());
        QVERIFY(!b.stopped);
        auto c = m.push("wer> trailing");
        QVERIFY(c.stopped);
        QVERIFY(c.emit.empty());

        StopStringMatcher one_char({"END"});
        const auto r = feed(one_char, {"x", "E", "N", "D", "y"});
        QVERIFY(r.stopped);
        QCOMPARE(r.stopped_at, 3);
        QCOMPARE(r.shown, std::string("x"));
    }

    void heldBackPrefixReleasedWhenItDiverges() {
        StopStringMatcher m({"</answer>"});
        auto a = m.push("a </an");
        QCOMPARE(a.emit, std::string("a "));
        auto b = m.push("chor>");
        QVERIFY(!b.stopped);
        QCOMPARE(b.emit, std::string("</anchor>"));
        auto c = m.push("<");
        QVERIFY(c.emit.empty());
        QCOMPARE(m.flush(), std::string("<"));
    }

    void multipleStopStringsEarliestWins() {
        StopStringMatcher m({"###", "\n\n"});
        auto res = m.push("first\n\nsecond ### third");
        QVERIFY(res.stopped);
        QCOMPARE(res.emit, std::string("first"));

        StopStringMatcher n({"###", "\n\n"});
        const auto r = feed(n, {"one #", "## two\n\n"});
        QVERIFY(r.stopped);
        QCOMPARE(r.shown, std::string("one "));
    }

    void overlappingPrefixes() {
        // "abab" is a prefix of "ababc": the stop must be found even though a first
        // candidate start fails ("ababab" + "c" contains "ababc" starting at 2).
        StopStringMatcher m({"ababc"});
        const auto r = feed(m, {"xab", "ab", "ab", "c tail"});
        QVERIFY(r.stopped);
        QCOMPARE(r.shown, std::string("xab"));

        // Two stops sharing a prefix: the shorter completes first.
        StopStringMatcher s({"<|end|>", "<|endoftext|>"});
        const auto t = feed(s, {"done<|end", "oftext|>"});
        QVERIFY(t.stopped);
        QCOMPARE(t.shown, std::string("done"));

        // Held-back text is the longest suffix that could start any stop string.
        StopStringMatcher u({"aaX", "aaaY"});
        auto a = u.push("baaa");
        QCOMPARE(a.emit, std::string("b"));
        auto b = u.push("X");
        QVERIFY(b.stopped);
        QCOMPARE(b.emit, std::string("a"));
    }

    void utf8NotSplit() {
        StopStringMatcher m({"é!"});
        auto a = m.push("café");
        QCOMPARE(a.emit, std::string("caf"));
        auto b = m.push("?");
        QCOMPARE(b.emit, std::string("é?"));
    }
};

QTEST_APPLESS_MAIN(TestStopStrings)
#include "test_stop_strings.moc"
