// Splits a reply's markdown into prose and fenced code blocks, so the view can render
// prose as rich text and each code block in a monospace box with its own copy button.
// A fence still open at the end (a reply being streamed) is a code block to the end.
#pragma once

#include <QList>
#include <QString>
#include <QVariantList>

namespace arbor::app {

struct MarkdownBlock {
    enum class Kind { Text, Code };
    Kind kind = Kind::Text;
    QString text;      // prose: the markdown source; code: the code without its fences
    QString language;  // code: the fence's info string (first word), may be empty

    bool operator==(const MarkdownBlock&) const = default;
};

QList<MarkdownBlock> splitMarkdown(const QString& markdown);

// For QML: a list of {kind: "text" | "code", text, language} maps.
QVariantList markdownBlocksToVariant(const QList<MarkdownBlock>& blocks);

} // namespace arbor::app
