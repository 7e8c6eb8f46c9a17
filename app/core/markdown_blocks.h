// Splits a reply's markdown into prose and fenced code blocks, so the view can render
// prose as rich text and each code block in a monospace box with its own copy button.
// Prose is further cut into independent paragraphs (see startsIndependentParagraph), so
// a streaming reply re-renders only its last piece. A fence still open at the end (a
// reply being streamed) is a code block to the end.
//
// MarkdownSplitter does it as the text grows at its end: the blocks that the text's
// complete lines close are final and never looked at again; only the open block's last
// line is read again when more text comes, so the cost of a token does not grow with the
// reply. Its blocks always equal splitMarkdown of the whole text so far.
#pragma once

#include <QList>
#include <QString>

namespace arbor::app {

struct MarkdownBlock {
    enum class Kind { Text, Code };
    Kind kind = Kind::Text;
    QString text;      // prose: the markdown source; code: the code without its fences
    QString language;  // code: the fence's info string (first word), may be empty

    bool operator==(const MarkdownBlock&) const = default;
};

class MarkdownSplitter {
public:
    // `text` must start with the text given before (or the splitter be cleared): what
    // came before the last complete line is not read again.
    void extend(const QString& text);
    // The text grows by `piece` (a streamed token): only the piece is copied.
    void append(QStringView piece);
    void clear() { *this = {}; }

    const QString& text() const { return text_; }
    // The blocks that no later text can change, in order.
    const QList<MarkdownBlock>& closed() const { return closed_; }
    // The blocks after closed() if the text ended here (none, one, or two when the line
    // being written starts a new block): the open block and what its unfinished last line
    // makes of it.
    QList<MarkdownBlock> open() const;

private:
    // Where a block being read lies in text_ (its lines, without fences).
    struct Lines {
        qsizetype begin = 0, end = 0;
        bool any = false;
    };
    // What the reading knows at the start of a line.
    struct State {
        bool inCode = false;
        QChar fenceChar;       // the open fence: ` or ~, repeated fenceLength times
        int fenceLength = 0;
        QString language;      // the open fence's
        bool afterBlank = false;
        Lines lines;           // of the block being read
    };

    // Reads the lines that newlines at or after `from` complete.
    void readNewLines(qsizetype from);
    // Reads the line text_[begin, end): complete when a newline ends it (otherwise more
    // of it may come, and it cuts prose only where no continuation could undo the cut).
    void readLine(State& state, QList<MarkdownBlock>& out, qsizetype begin, qsizetype end, bool complete) const;
    void closeBlock(State& state, QList<MarkdownBlock>& out) const;

    QString text_;
    State state_;              // at the start of the last line (the first not ended by a newline)
    qsizetype lastLine_ = 0;   // where that line starts in text_
    QList<MarkdownBlock> closed_;
};

QList<MarkdownBlock> splitMarkdown(const QString& markdown);

} // namespace arbor::app
