// Syntax colours of code blocks: for each line, a pattern of what every character was
// coloured as (k keyword, s string, c comment, n number, . plain), written by hand.
#include "code_syntax.h"

#include <QGuiApplication>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextLayout>
#include <QtTest>

using arbor::app::CodeSyntax;

namespace {

// The pattern of every line of `code` highlighted as `language`.
QStringList patterns(const QString& language, const QString& code) {
    QTextDocument doc;
    doc.setPlainText(code);
    CodeSyntax syntax(&doc, language, false);
    syntax.rehighlight();
    const std::pair<CodeSyntax::Kind, QChar> kinds[] = {{CodeSyntax::Kind::Keyword, 'k'},
                                                        {CodeSyntax::Kind::String, 's'},
                                                        {CodeSyntax::Kind::Comment, 'c'},
                                                        {CodeSyntax::Kind::Number, 'n'}};
    QStringList out;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
        QString line(b.length() - 1, QLatin1Char('.'));
        for (const QTextLayout::FormatRange& r : b.layout()->formats())
            for (const auto& [kind, letter] : kinds)
                if (r.format.foreground() == syntax.format(kind).foreground())
                    for (int i = r.start; i < r.start + r.length && i < line.size(); ++i) line[i] = letter;
        out << line;
    }
    return out;
}

} // namespace

class TestCodeSyntax : public QObject {
    Q_OBJECT
private slots:
    void linesAreColouredByKind_data() {
        QTest::addColumn<QString>("language");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QStringList>("expected");
        QTest::newRow("c++ keywords, number, comment")
            << "cpp" << "int x = 42; // answer" << QStringList{"kkk.....nn..ccccccccc"};
        QTest::newRow("comment marker inside a string")
            << "c++" << "auto s = \"// no\"; return s;" << QStringList{"kkkk.....sssssss..kkkkkk..."};
        QTest::newRow("escaped quote stays in the string")
            << "js" << "let a = \"x\\\"y\" + 1" << QStringList{"kkk.....ssssss...n"};
        QTest::newRow("preprocessor and identifiers with digits")
            << "c" << "#include <stdio.h>\nint x2 = 0x1f;" << QStringList{"kkkkkkkk..........", "kkk......nnnn."};
        QTest::newRow("block comment over lines")
            << "cpp" << "int a; /* one\ntwo */ int b;" << QStringList{"kkk....cccccc", "cccccc.kkk..."};
        QTest::newRow("/*/ opens a comment, it does not close it")
            << "cpp" << "/*/ x */ y" << QStringList{"cccccccc.."};
        QTest::newRow("python def, comment")
            << "python" << "def f(x): # note" << QStringList{"kkk.......cccccc"};
        QTest::newRow("python triple quotes over lines")
            << "Python" << "s = \"\"\"a\nb\"\"\" + 'c'" << QStringList{"....ssss", "ssss...sss"};
        QTest::newRow("shell: $# is not a comment")
            << "bash" << "echo $# # count" << QStringList{"kkkk....ccccccc"};
        QTest::newRow("json") << "json" << "{\"a\": 1.5, \"b\": true}" << QStringList{".sss..nnn..sss..kkkk."};
        QTest::newRow("rust lifetimes are not strings")
            << "rust" << "fn f<'a>(x: &'a str)" << QStringList{"kk.................."};
        QTest::newRow("sql comment") << "sql" << "SELECT 1 -- one" << QStringList{"kkkkkk.n.cccccc"};
        QTest::newRow("unknown language stays plain") << "klingon" << "int x = 1; // y" << QStringList{"..............."};
        QTest::newRow("no language stays plain") << "" << "def f(): pass" << QStringList{"............."};
    }
    void linesAreColouredByKind() {
        QFETCH(QString, language);
        QFETCH(QString, code);
        QFETCH(QStringList, expected);
        QCOMPARE(patterns(language, code), expected);
    }

    void languageNamesAreMatchedLoosely() {
        QVERIFY(CodeSyntax::knows("C++"));
        QVERIFY(CodeSyntax::knows(" python "));
        QVERIFY(CodeSyntax::knows("sh"));
        QVERIFY(!CodeSyntax::knows("klingon"));
        QVERIFY(!CodeSyntax::knows(""));
    }

    void darkThemeHasItsOwnColours() {
        QTextDocument doc;
        CodeSyntax syntax(&doc, "cpp", false);
        const QBrush light = syntax.format(CodeSyntax::Kind::Keyword).foreground();
        syntax.setDark(true);
        QVERIFY(syntax.format(CodeSyntax::Kind::Keyword).foreground() != light);
        QVERIFY(syntax.format(CodeSyntax::Kind::Comment).fontItalic());
    }
};

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QGuiApplication app(argc, argv);
    TestCodeSyntax test;
    return QTest::qExec(&test, argc, argv);
}
#include "test_code_syntax.moc"
