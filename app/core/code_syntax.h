// Syntax colours for a fenced code block's document: keywords, strings, comments and
// numbers of common languages, chosen by the fence's info string ("cpp", "python",
// "bash", ...). A language it does not know stays plain text.
//
// One left-to-right scan per line, so a comment marker inside a string (or a quote inside
// a comment) is not taken for one. Block comments (/* */) and Python's triple-quoted
// strings carry over to the next lines through the block state.
#pragma once

#include <QString>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace arbor::app {

struct CodeLanguage;

class CodeSyntax : public QSyntaxHighlighter {
public:
    enum class Kind { Keyword, String, Comment, Number };

    // `dark`: colours for a dark background.
    CodeSyntax(QTextDocument* document, const QString& language, bool dark);
    ~CodeSyntax() override;

    static bool knows(const QString& language);
    // The format given to each kind of token (for tests and for a theme change).
    QTextCharFormat format(Kind kind) const;
    void setDark(bool dark);

protected:
    void highlightBlock(const QString& text) override;

private:
    // Block states: inside a block comment or a triple-quoted string at the line's end.
    enum State { Plain = -1, InBlockComment = 1, InTripleDouble = 2, InTripleSingle = 3 };

    // Formats from `from` to the end of the construct that `state` is in, whose closing
    // delimiter is searched from `searchFrom`; returns where it ended (text.size() when it
    // goes on past the line, with the state set for the next line).
    qsizetype continueState(const QString& text, qsizetype from, qsizetype searchFrom, State state);

    const CodeLanguage* language_ = nullptr;
    QTextCharFormat formats_[4];
};

} // namespace arbor::app
