// Splits a reply's markdown into prose and fenced code blocks, so the view can render
// prose as rich text and each code block in a monospace box with its own copy button.
// Prose is further cut into independent paragraphs (see startsIndependentParagraph), so
// a streaming reply re-renders only its last piece. A fence still open at the end (a
// reply being streamed) is a code block to the end.
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

QList<MarkdownBlock> splitMarkdown(const QString& markdown);

} // namespace arbor::app
