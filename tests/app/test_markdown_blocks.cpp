// Splitting a reply's markdown into prose and fenced code blocks (CommonMark fences:
// ``` or ~~~, three or more, indented by up to three spaces), with a fence still open at
// the end of a streaming reply taken as code to the end, and prose cut into paragraphs
// where that keeps its meaning (a last line still being written included). Every
// expected block is written out by hand.
#include "markdown_blocks.h"
#include "markdown_test_text.h"

#include <QtTest>

using arbor::app::MarkdownBlock;
using arbor::app::MarkdownSplitter;
using arbor::app::splitMarkdown;
using Blocks = QList<MarkdownBlock>;

namespace {

MarkdownBlock prose(const QString& text) { return {MarkdownBlock::Kind::Text, text, {}}; }
MarkdownBlock code(const QString& text, const QString& language = {}) {
    return {MarkdownBlock::Kind::Code, text, language};
}

QString describe(const Blocks& blocks) {
    QStringList out;
    for (const auto& b : blocks)
        out << QStringLiteral("%1[%2]{%3}")
                   .arg(b.kind == MarkdownBlock::Kind::Code ? "code" : "text", b.language, b.text);
    return out.join(QStringLiteral(" | "));
}

} // namespace

class TestMarkdownBlocks : public QObject {
    Q_OBJECT

private slots:
    void split_data() {
        QTest::addColumn<QString>("markdown");
        QTest::addColumn<Blocks>("expected");

        QTest::newRow("empty") << QString() << Blocks{};
        QTest::newRow("only blank lines") << QString("\n  \n\n") << Blocks{};
        QTest::newRow("prose only")
            << QString("Some *bold* text.\n- a\n- b")
            << Blocks{prose("Some *bold* text.\n- a\n- b")};
        QTest::newRow("paragraphs are separate blocks")
            << QString("# Title\n\nFirst paragraph,\nstill first.\n\n\nSecond.")
            << Blocks{prose("# Title"), prose("First paragraph,\nstill first."), prose("Second.")};
        QTest::newRow("a list's items stay together")
            << QString("Steps:\n\n1. one\n\n2. two\n\n- a\n\n* b\n\n+ c\n\n10) ten\n\nAfter.")
            << Blocks{prose("Steps:\n\n1. one\n\n2. two\n\n- a\n\n* b\n\n+ c\n\n10) ten"), prose("After.")};
        QTest::newRow("indented paragraphs and code stay with what they follow")
            << QString("- item\n\n  more of the item\n\nText\n\n    indented code\n\n\tTabbed")
            << Blocks{prose("- item\n\n  more of the item"), prose("Text\n\n    indented code\n\n\tTabbed")};
        QTest::newRow("a number or dash not starting a list item")
            << QString("One\n\n2024 was a year.\n\n-5 degrees\n\n3.14 is pi")
            << Blocks{prose("One"), prose("2024 was a year."), prose("-5 degrees"), prose("3.14 is pi")};
        QTest::newRow("prose is trimmed") << QString("\n\n  Hello there.  \n\n") << Blocks{prose("Hello there.")};
        QTest::newRow("one block with language")
            << QString("```cpp\nint main() {\n    return 0;\n}\n```")
            << Blocks{code("int main() {\n    return 0;\n}", "cpp")};
        QTest::newRow("language is the first word of the info string")
            << QString("```python title=\"x.py\"\nprint(1)\n```") << Blocks{code("print(1)", "python")};
        QTest::newRow("no language") << QString("```\nls -l\n```") << Blocks{code("ls -l")};
        QTest::newRow("text before and after")
            << QString("Run this:\n\n```sh\nmake -j2\n```\n\nThen test it.")
            << Blocks{prose("Run this:"), code("make -j2", "sh"), prose("Then test it.")};
        QTest::newRow("tilde fence")
            << QString("Example:\n~~~ruby\nputs 1\n```\nputs 2\n~~~\nDone.")
            << Blocks{prose("Example:"), code("puts 1\n```\nputs 2", "ruby"), prose("Done.")};
        QTest::newRow("backtick fence is not closed by tildes")
            << QString("```\na\n~~~\nb\n```") << Blocks{code("a\n~~~\nb")};
        QTest::newRow("four backticks hold three")
            << QString("````markdown\nUse:\n```js\nlet x = 1;\n```\n````\nAfter.")
            << Blocks{code("Use:\n```js\nlet x = 1;\n```", "markdown"), prose("After.")};
        QTest::newRow("a longer closing fence closes")
            << QString("```\nx\n`````\ny") << Blocks{code("x"), prose("y")};
        QTest::newRow("a fence with an info string does not close")
            << QString("```\nx\n```js\ny\n```") << Blocks{code("x\n```js\ny")};
        QTest::newRow("indented fences up to three spaces")
            << QString("Intro\n   ```c\nint a;\n  ```\nOutro")
            << Blocks{prose("Intro"), code("int a;", "c"), prose("Outro")};
        QTest::newRow("one space indent") << QString(" ~~~\nz\n ~~~") << Blocks{code("z")};
        QTest::newRow("four spaces is not a fence")
            << QString("Text\n    ```\n    code\n    ```") << Blocks{prose("Text\n    ```\n    code\n    ```")};
        QTest::newRow("two backticks is not a fence") << QString("``not code``\nline") << Blocks{prose("``not code``\nline")};
        QTest::newRow("backtick in a backtick info string is not a fence")
            << QString("``` a`b\nstill prose") << Blocks{prose("``` a`b\nstill prose")};
        QTest::newRow("blank lines inside code are kept")
            << QString("```\na\n\n\nb\n```") << Blocks{code("a\n\n\nb")};
        QTest::newRow("empty closed block") << QString("```go\n```") << Blocks{code("", "go")};
        QTest::newRow("two blocks back to back")
            << QString("```a\n1\n```\n```b\n2\n```") << Blocks{code("1", "a"), code("2", "b")};
        QTest::newRow("unclosed fence at the end is code (streaming)")
            << QString("Here you go:\n```py\nfor i in range(3):\n    print(")
            << Blocks{prose("Here you go:"), code("for i in range(3):\n    print(", "py")};
        QTest::newRow("an opening fence just arrived")
            << QString("Here you go:\n```") << Blocks{prose("Here you go:"), code("")};
        QTest::newRow("unclosed four-backtick fence keeps a three-backtick fence inside")
            << QString("````\n```\nx") << Blocks{code("```\nx")};
        // The last line, not ended by a newline, may still be growing: it cuts prose only
        // where no continuation could make it a list item's first line.
        QTest::newRow("digits still being written stay with the paragraph before")
            << QString("One\n\n12") << Blocks{prose("One\n\n12")};
        QTest::newRow("a line of digits ended by a newline is a paragraph")
            << QString("One\n\n12\n") << Blocks{prose("One"), prose("12")};
        QTest::newRow("ten digits cannot start a list item")
            << QString("One\n\n1234567890") << Blocks{prose("One"), prose("1234567890")};
        QTest::newRow("a table stays one block")
            << QString("Sizes:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter.")
            << Blocks{prose("Sizes:"), prose("| a | b |\n|---|---|\n| 1 | 2 |"), prose("After.")};
        QTest::newRow("a heading and its text without a blank line stay together")
            << QString("## Setup\nInstall it.\n\n## Use\nRun it.")
            << Blocks{prose("## Setup\nInstall it."), prose("## Use\nRun it.")};
    }

    void split() {
        QFETCH(QString, markdown);
        QFETCH(Blocks, expected);
        const Blocks actual = splitMarkdown(markdown);
        QVERIFY2(actual == expected,
                 qPrintable(QStringLiteral("got: %1\nwanted: %2").arg(describe(actual), describe(expected))));
    }

    // The sample reply streamed in pieces: a block, once closed, is never changed again
    // and stays where it is; at most two blocks are open; the end is the reply's blocks.
    void streamingClosesBlocksForGood_data() {
        QTest::addColumn<QStringList>("pieces");
        const QString reply = arbor::test::sampleReply();
        QTest::newRow("characters") << arbor::test::piecesOf(reply, 1);
        QTest::newRow("pieces of 4") << arbor::test::piecesOf(reply, 4);
        QTest::newRow("words") << arbor::test::piecesLikeWords(reply);
        QTest::newRow("fences cut after two backticks") << arbor::test::piecesSplittingFences(reply);
    }

    void streamingClosesBlocksForGood() {
        QFETCH(QStringList, pieces);
        MarkdownSplitter splitter;
        QString text;
        Blocks closedBefore;
        for (const QString& piece : pieces) {
            text += piece;
            splitter.extend(text);
            QVERIFY(splitter.closed().size() >= closedBefore.size());
            QVERIFY2(splitter.closed().first(closedBefore.size()) == closedBefore, qPrintable(text.right(40)));
            QVERIFY(splitter.open().size() <= 2);
            closedBefore = splitter.closed();
        }
        const Blocks blocks = splitter.closed() + splitter.open();
        QCOMPARE(blocks.size(), 15);
        QStringList languages;
        for (const MarkdownBlock& b : blocks)
            if (b.kind == MarkdownBlock::Kind::Code) languages << b.language;
        QCOMPARE(languages, (QStringList{"sh", "python", "markdown", "text"}));
        QCOMPARE(blocks[6], prose("| Step      | Time  | Notes          |\n|-----------|-------|----------------|\n"
                                  "| configure | 4 s   | once           |\n| build     | 120 s | with two cores |\n"
                                  "| test      | 30 s  | `ctest -j2`    |"));
        QCOMPARE(blocks[11], code("Four backticks hold three:\n```\nstill inside", "text"));
        QCOMPARE(blocks.last(), prose("Finally, a last paragraph\nthat goes over two lines."));

        splitter.clear();
        splitter.extend(QStringLiteral("```c\nint"));
        QVERIFY(splitter.closed().isEmpty());
        QCOMPARE(splitter.open(), (Blocks{code("int", "c")}));
    }
};

QTEST_APPLESS_MAIN(TestMarkdownBlocks)
#include "test_markdown_blocks.moc"
