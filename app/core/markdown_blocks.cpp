#include "markdown_blocks.h"

#include <QVariantMap>

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

} // namespace

QList<MarkdownBlock> splitMarkdown(const QString& markdown) {
    QList<MarkdownBlock> blocks;
    QStringList prose, code;
    Fence open;
    bool inCode = false;
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
                prose.push_back(line);
            }
        } else if (closes(line, open)) {
            blocks.push_back({MarkdownBlock::Kind::Code, code.join(QLatin1Char('\n')), open.info.section(' ', 0, 0)});
            inCode = false;
        } else {
            code.push_back(line);
        }
    }
    if (inCode) blocks.push_back({MarkdownBlock::Kind::Code, code.join(QLatin1Char('\n')), open.info.section(' ', 0, 0)});
    else flushProse();
    return blocks;
}

QVariantList markdownBlocksToVariant(const QList<MarkdownBlock>& blocks) {
    QVariantList out;
    for (const auto& b : blocks) {
        QVariantMap m;
        m[QStringLiteral("kind")] = b.kind == MarkdownBlock::Kind::Code ? QStringLiteral("code") : QStringLiteral("text");
        m[QStringLiteral("text")] = b.text;
        m[QStringLiteral("language")] = b.language;
        out.push_back(m);
    }
    return out;
}

} // namespace arbor::app
