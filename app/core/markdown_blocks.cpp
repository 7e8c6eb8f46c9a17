#include "markdown_blocks.h"

#include <utility>

namespace arbor::app {

namespace {

struct Fence {
    QChar ch;
    int length = 0;
    QStringView info;
};

// A fence line: up to three spaces, then three or more ` or ~ (CommonMark); a backtick
// fence's info string may not contain a backtick.
bool parseFence(QStringView line, Fence& fence) {
    int i = 0;
    while (i < line.size() && i < 3 && line[i] == QLatin1Char(' ')) ++i;
    if (i >= line.size() || (line[i] != QLatin1Char('`') && line[i] != QLatin1Char('~'))) return false;
    const QChar ch = line[i];
    int n = 0;
    while (i + n < line.size() && line[i + n] == ch) ++n;
    if (n < 3) return false;
    const QStringView info = line.sliced(i + n).trimmed();
    if (ch == QLatin1Char('`') && info.contains(QLatin1Char('`'))) return false;
    fence = {ch, n, info};
    return true;
}

// A list item's first line: "-", "*" or "+", or up to nine digits and "." or ")", then a
// space or the end of the line.
bool startsListItem(QStringView line) {
    int i = 0;
    if (line.startsWith(QLatin1Char('-')) || line.startsWith(QLatin1Char('*')) || line.startsWith(QLatin1Char('+'))) {
        i = 1;
    } else {
        while (i < line.size() && i < 9 && line[i].isDigit()) ++i;
        if (i == 0 || i >= line.size() || (line[i] != QLatin1Char('.') && line[i] != QLatin1Char(')'))) return false;
        ++i;
    }
    return i == line.size() || line[i] == QLatin1Char(' ') || line[i] == QLatin1Char('\t');
}

// The start of a line that more text could still make a list item's first line ("12"
// before its "."); the other beginnings of list items already are one ("-").
bool mayBecomeListItem(QStringView line) {
    if (line.isEmpty() || line.size() > 9) return false;
    for (QChar c : line)
        if (!c.isDigit()) return false;
    return true;
}

// Where prose can be cut into separately rendered pieces without changing what it
// means: after a blank line, before a line that starts at the margin and does not start
// a list item (so a list's items, a list item's indented paragraphs and indented code
// stay together, and an ordered list never restarts its numbering). A line still being
// written cuts only when no continuation of it could start a list item, so a cut, once
// shown, stays.
bool startsIndependentParagraph(QStringView line, bool complete) {
    return !line.isEmpty() && !line[0].isSpace() && !startsListItem(line) && (complete || !mayBecomeListItem(line));
}

} // namespace

void MarkdownSplitter::extend(const QString& text) {
    Q_ASSERT(text.startsWith(text_));
    if (text_.isEmpty()) {
        text_ = text;  // shares the caller's copy
        readNewLines(0);
    } else {
        append(QStringView(text).sliced(text_.size()));
    }
}

void MarkdownSplitter::append(QStringView piece) {
    const qsizetype from = text_.size();
    text_ += piece;
    readNewLines(from);
}

void MarkdownSplitter::readNewLines(qsizetype from) {
    // The lines before `from` had no newline after lastLine_: look for new ones only.
    for (qsizetype newline; (newline = text_.indexOf(QLatin1Char('\n'), from)) >= 0; from = lastLine_) {
        readLine(state_, closed_, lastLine_, newline, true);
        lastLine_ = newline + 1;
    }
}

QList<MarkdownBlock> MarkdownSplitter::open() const {
    State state = state_;
    QList<MarkdownBlock> blocks;
    readLine(state, blocks, lastLine_, text_.size(), false);
    closeBlock(state, blocks);
    return blocks;
}

void MarkdownSplitter::readLine(State& state, QList<MarkdownBlock>& out, qsizetype begin, qsizetype end,
                                bool complete) const {
    const QStringView line = QStringView(text_).sliced(begin, end - begin);
    Fence fence;
    if (!state.inCode) {
        if (parseFence(line, fence)) {
            closeBlock(state, out);
            state.inCode = true;
            state.fenceChar = fence.ch;
            state.fenceLength = fence.length;
            const qsizetype space = fence.info.indexOf(QLatin1Char(' '));
            state.language = (space < 0 ? fence.info : fence.info.first(space)).toString();
            return;
        }
        if (state.afterBlank && startsIndependentParagraph(line, complete)) closeBlock(state, out);
        state.afterBlank = line.trimmed().isEmpty();
    } else if (parseFence(line, fence) && fence.ch == state.fenceChar && fence.length >= state.fenceLength &&
               fence.info.isEmpty()) {
        closeBlock(state, out);
        state.inCode = false;
        state.afterBlank = false;
        return;
    }
    if (!state.lines.any) state.lines = {begin, end, true};
    state.lines.end = end;
}

void MarkdownSplitter::closeBlock(State& state, QList<MarkdownBlock>& out) const {
    const Lines lines = std::exchange(state.lines, {});
    const QString text = lines.any ? text_.sliced(lines.begin, lines.end - lines.begin) : QString();
    if (state.inCode) {
        out.push_back({MarkdownBlock::Kind::Code, text, state.language});
    } else {
        QString prose = text.trimmed();
        if (!prose.isEmpty()) out.push_back({MarkdownBlock::Kind::Text, std::move(prose), {}});
    }
}

QList<MarkdownBlock> splitMarkdown(const QString& markdown) {
    MarkdownSplitter splitter;
    splitter.extend(markdown);
    return splitter.closed() + splitter.open();
}

} // namespace arbor::app
