#include "markdown_blocks.h"

namespace arbor::app {

namespace {

struct Fence {
    QChar ch;
    int length = 0;
    QString info;
};

// A fence line: up to three spaces, then three or more ` or ~ (CommonMark); a backtick
// fence's info string may not contain a backtick.
bool parseFence(const QString& line, Fence& fence) {
    int i = 0;
    while (i < line.size() && i < 3 && line[i] == QLatin1Char(' ')) ++i;
    if (i >= line.size() || (line[i] != QLatin1Char('`') && line[i] != QLatin1Char('~'))) return false;
    const QChar ch = line[i];
    int n = 0;
    while (i + n < line.size() && line[i + n] == ch) ++n;
    if (n < 3) return false;
    const QString info = line.mid(i + n).trimmed();
    if (ch == QLatin1Char('`') && info.contains(QLatin1Char('`'))) return false;
    fence = {ch, n, info};
    return true;
}

bool closes(const QString& line, const Fence& open) {
    Fence f;
    return parseFence(line, f) && f.ch == open.ch && f.length >= open.length && f.info.isEmpty();
}

// A list item's first line: "-", "*" or "+", or up to nine digits and "." or ")", then a
// space or the end of the line.
bool startsListItem(const QString& line) {
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

// Where prose can be cut into separately rendered pieces without changing what it
// means: after a blank line, before a line that starts at the margin and does not start
// a list item (so a list's items, a list item's indented paragraphs and indented code
// stay together, and an ordered list never restarts its numbering).
bool startsIndependentParagraph(const QString& line) {
    return !line.isEmpty() && !line[0].isSpace() && !startsListItem(line);
}

} // namespace

QList<MarkdownBlock> splitMarkdown(const QString& markdown) {
    QList<MarkdownBlock> blocks;
    QStringList prose, code;
    Fence open;
    bool inCode = false;
    bool afterBlank = false;
    auto flushProse = [&] {
        QString text = prose.join(QLatin1Char('\n'));
        if (!text.trimmed().isEmpty()) blocks.push_back({MarkdownBlock::Kind::Text, text.trimmed(), {}});
        prose.clear();
    };
    const QStringList lines = markdown.split(QLatin1Char('\n'));
    for (const QString& line : lines) {
        if (!inCode) {
            if (parseFence(line, open)) {
                flushProse();
                inCode = true;
                code.clear();
            } else {
                if (afterBlank && startsIndependentParagraph(line)) flushProse();
                afterBlank = line.trimmed().isEmpty();
                prose.push_back(line);
            }
        } else if (closes(line, open)) {
            blocks.push_back({MarkdownBlock::Kind::Code, code.join(QLatin1Char('\n')), open.info.section(' ', 0, 0)});
            inCode = false;
            afterBlank = false;
        } else {
            code.push_back(line);
        }
    }
    if (inCode) blocks.push_back({MarkdownBlock::Kind::Code, code.join(QLatin1Char('\n')), open.info.section(' ', 0, 0)});
    else flushProse();
    return blocks;
}

} // namespace arbor::app
