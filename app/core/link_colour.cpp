#include "link_colour.h"

#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>

namespace arbor::app {

LinkColour::LinkColour(QObject* parent) : QObject(parent) {}

void LinkColour::setDocument(QQuickTextDocument* document) {
    if (document_ == document) return;
    document_ = document;
    apply();
    emit changed();
}

void LinkColour::setColor(const QColor& color) {
    if (color_ == color) return;
    color_ = color;
    apply();
    emit changed();
}

void LinkColour::apply() {
    QTextDocument* doc = document_ ? document_->textDocument() : nullptr;
    if (!doc || !color_.isValid()) return;
    for (QTextBlock block = doc->begin(); block.isValid(); block = block.next()) {
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            if (!fragment.isValid() || !fragment.charFormat().isAnchor() ||
                fragment.charFormat().foreground().color() == color_)
                continue;
            QTextCursor cursor(doc);
            cursor.setPosition(fragment.position());
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
            QTextCharFormat format;
            format.setForeground(color_);
            cursor.mergeCharFormat(format);
        }
    }
}

} // namespace arbor::app
