#include "code_syntax.h"

#include <QFont>
#include <QHash>
#include <QSet>

namespace arbor::app {

struct CodeLanguage {
    QSet<QString> keywords;
    QString lineComment;           // "//", "#", "--" or empty
    bool hashAfterSpaceOnly = false;  // shell: '#' starts a comment only at a word's start
    bool blockComments = false;       // /* ... */
    bool tripleQuotes = false;        // Python's """ and '''
    bool backquoteStrings = false;    // JavaScript's template strings
    bool singleQuoteStrings = true;   // false where ' is not a string delimiter (Rust lifetimes)
};

namespace {

QSet<QString> words(const char* list) {
    QSet<QString> out;
    for (const QString& w : QString::fromLatin1(list).split(QLatin1Char(' '), Qt::SkipEmptyParts)) out.insert(w);
    return out;
}

const QHash<QString, const CodeLanguage*>& languages() {
    static const CodeLanguage c{
        words("auto break case char const continue default do double else enum extern float for goto if inline int "
              "long register restrict return short signed sizeof static struct switch typedef union unsigned void "
              "volatile while bool true false NULL include define ifdef ifndef endif pragma"),
        "//", false, true};
    static const CodeLanguage cpp{
        words("alignas alignof and auto bool break case catch char char8_t char16_t char32_t class concept const "
              "consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete "
              "do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long "
              "mutable namespace new noexcept not nullptr operator or override private protected public "
              "reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch "
              "template this thread_local throw true try typedef typeid typename union unsigned using virtual void "
              "volatile while final include define ifdef ifndef endif pragma"),
        "//", false, true};
    static const CodeLanguage java{
        words("abstract assert boolean break byte case catch char class const continue default do double else enum "
              "extends final finally float for goto if implements import instanceof int interface long native new "
              "package private protected public return short static strictfp super switch synchronized this throw "
              "throws transient try void volatile while true false null var record"),
        "//", false, true};
    static const CodeLanguage js{
        words("async await break case catch class const continue debugger default delete do else export extends "
              "false finally for function if import in instanceof let new null return super switch this throw true "
              "try typeof undefined var void while with yield of static get set interface type enum implements "
              "private public protected readonly as from"),
        "//", false, true, false, true};
    static const CodeLanguage go{
        words("break case chan const continue default defer else fallthrough for func go goto if import interface map "
              "package range return select struct switch type var true false nil"),
        "//", false, true, false, true};
    static const CodeLanguage rust{
        words("as async await break const continue crate dyn else enum extern false fn for if impl in let loop match "
              "mod move mut pub ref return self Self static struct super trait true type unsafe use where while"),
        "//", false, true, false, false, false};
    static const CodeLanguage python{
        words("False None True and as assert async await break class continue def del elif else except finally for "
              "from global if import in is lambda nonlocal not or pass raise return try while with yield match case "
              "self print"),
        "#", false, false, true};
    static const CodeLanguage shell{
        words("if then else elif fi case esac for while until do done in function select time return exit export "
              "local readonly declare echo cd set unset shift source"),
        "#", true};
    static const CodeLanguage sql{
        words("select from where insert into values update set delete create table drop alter index primary key "
              "foreign references not null and or join left right inner outer on group by order having limit offset "
              "as distinct union all exists in is like between case when then else end begin commit rollback "
              "SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER INDEX PRIMARY KEY "
              "FOREIGN REFERENCES NOT NULL AND OR JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT "
              "OFFSET AS DISTINCT UNION ALL EXISTS IN IS LIKE BETWEEN CASE WHEN THEN ELSE END BEGIN COMMIT ROLLBACK"),
        "--", false, true};
    static const CodeLanguage json{words("true false null"), QString()};
    static const CodeLanguage config{words("true false yes no on off null"), "#", true};

    static const QHash<QString, const CodeLanguage*> table = [] {
        QHash<QString, const CodeLanguage*> t;
        auto add = [&](const CodeLanguage& l, const char* names) {
            for (const QString& n : QString::fromLatin1(names).split(QLatin1Char(' '))) t.insert(n, &l);
        };
        add(c, "c h");
        add(cpp, "cpp c++ cc cxx hpp hh hxx cuda cu");
        add(java, "java kotlin kt scala csharp cs c# dart swift");
        add(js, "javascript js jsx mjs typescript ts tsx");
        add(go, "go golang");
        add(rust, "rust rs");
        add(python, "python py python3");
        add(shell, "bash sh shell zsh console shellsession");
        add(sql, "sql sqlite postgresql mysql");
        add(json, "json jsonc");
        add(config, "yaml yml toml ini conf dockerfile");
        return t;
    }();
    return table;
}

bool isIdentStart(QChar c) { return c.isLetter() || c == QLatin1Char('_'); }
bool isIdent(QChar c) { return c.isLetterOrNumber() || c == QLatin1Char('_'); }

} // namespace

CodeSyntax::CodeSyntax(QTextDocument* document, const QString& language, bool dark)
    : QSyntaxHighlighter(document), language_(languages().value(language.trimmed().toLower(), nullptr)) {
    setDark(dark);
}

CodeSyntax::~CodeSyntax() = default;

bool CodeSyntax::knows(const QString& language) {
    return languages().contains(language.trimmed().toLower());
}

QTextCharFormat CodeSyntax::format(Kind kind) const {
    return formats_[int(kind)];
}

void CodeSyntax::setDark(bool dark) {
    // Material-like hues, lighter on a dark background; each at least 4.5:1 against the
    // code block's background in its theme (ui/Theme.qml).
    const char* const light[] = {"#7b1fa2", "#1b5e20", "#616161", "#1565c0"};
    const char* const darkHues[] = {"#ce93d8", "#a5d6a7", "#9e9e9e", "#90caf9"};
    for (int k = 0; k < 4; ++k) {
        QTextCharFormat f;
        f.setForeground(QColor(QLatin1String(dark ? darkHues[k] : light[k])));
        if (Kind(k) == Kind::Keyword) f.setFontWeight(QFont::DemiBold);
        if (Kind(k) == Kind::Comment) f.setFontItalic(true);
        formats_[k] = f;
    }
    rehighlight();
}

qsizetype CodeSyntax::continueState(const QString& text, qsizetype from, qsizetype searchFrom, State state) {
    const QString end = state == InBlockComment ? QStringLiteral("*/")
                        : state == InTripleDouble ? QStringLiteral("\"\"\"")
                                                  : QStringLiteral("'''");
    const Kind kind = state == InBlockComment ? Kind::Comment : Kind::String;
    const qsizetype at = text.indexOf(end, searchFrom);
    const qsizetype stop = at < 0 ? text.size() : at + end.size();
    setFormat(int(from), int(stop - from), format(kind));
    if (at < 0) setCurrentBlockState(state);
    return stop;
}

void CodeSyntax::highlightBlock(const QString& text) {
    setCurrentBlockState(Plain);
    if (!language_) return;
    const CodeLanguage& lang = *language_;
    qsizetype i = 0;
    if (previousBlockState() != Plain) i = continueState(text, 0, 0, State(previousBlockState()));
    const qsizetype n = text.size();
    while (i < n) {
        const QChar c = text[i];
        if (lang.blockComments && text.mid(i, 2) == QLatin1String("/*")) {
            i = continueState(text, i, i + 2, InBlockComment);
            continue;
        }
        if (!lang.lineComment.isEmpty() && text.mid(i, lang.lineComment.size()) == lang.lineComment &&
            (!lang.hashAfterSpaceOnly || i == 0 || text[i - 1].isSpace())) {
            setFormat(int(i), int(n - i), format(Kind::Comment));
            return;
        }
        if (lang.tripleQuotes && (text.mid(i, 3) == QLatin1String("\"\"\"") || text.mid(i, 3) == QLatin1String("'''"))) {
            i = continueState(text, i, i + 3, c == QLatin1Char('"') ? InTripleDouble : InTripleSingle);
            continue;
        }
        if (c == QLatin1Char('"') || (c == QLatin1Char('\'') && lang.singleQuoteStrings) ||
            (c == QLatin1Char('`') && lang.backquoteStrings)) {
            qsizetype j = i + 1;
            while (j < n && text[j] != c) j += text[j] == QLatin1Char('\\') ? 2 : 1;
            const qsizetype stop = std::min(n, j + 1);
            setFormat(int(i), int(stop - i), format(Kind::String));
            i = stop;
            continue;
        }
        if (c.isDigit() && (i == 0 || !isIdent(text[i - 1]))) {
            qsizetype j = i + 1;
            while (j < n && (text[j].isLetterOrNumber() || text[j] == QLatin1Char('.') || text[j] == QLatin1Char('_'))) ++j;
            setFormat(int(i), int(j - i), format(Kind::Number));
            i = j;
            continue;
        }
        if (isIdentStart(c) || (c == QLatin1Char('#') && lang.blockComments)) {
            qsizetype j = i + 1;
            while (j < n && isIdent(text[j])) ++j;
            // C's preprocessor lines: "#include" is keyword "include" after the '#'.
            const qsizetype word = c == QLatin1Char('#') ? i + 1 : i;
            if (lang.keywords.contains(text.mid(word, j - word))) setFormat(int(i), int(j - i), format(Kind::Keyword));
            i = j;
            continue;
        }
        ++i;
    }
}

} // namespace arbor::app
