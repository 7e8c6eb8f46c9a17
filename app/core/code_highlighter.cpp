#include "code_highlighter.h"

namespace arbor::app {

CodeHighlighter::CodeHighlighter(QObject* parent) : QObject(parent) {}

CodeHighlighter::~CodeHighlighter() {
    delete syntax_.data();
}

void CodeHighlighter::setDocument(QQuickTextDocument* document) {
    if (document_ == document) return;
    document_ = document;
    rebuild();
}

void CodeHighlighter::setLanguage(const QString& language) {
    if (language_ == language) return;
    language_ = language;
    rebuild();
}

void CodeHighlighter::setDark(bool dark) {
    if (dark_ == dark) return;
    dark_ = dark;
    if (syntax_) syntax_->setDark(dark);
    emit changed();
}

void CodeHighlighter::rebuild() {
    delete syntax_.data();
    if (document_ && document_->textDocument() && CodeSyntax::knows(language_))
        syntax_ = new CodeSyntax(document_->textDocument(), language_, dark_);
    emit changed();
}

} // namespace arbor::app
