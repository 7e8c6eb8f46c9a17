// Attaches CodeSyntax to a QML TextEdit's document: CodeBlock sets the document, the
// fence's language and whether the theme is dark.
#pragma once

#include "code_syntax.h"

#include <QObject>
#include <QPointer>
#include <QQuickTextDocument>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class CodeHighlighter : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(QQuickTextDocument* document READ document WRITE setDocument NOTIFY changed)
    Q_PROPERTY(QString language READ language WRITE setLanguage NOTIFY changed)
    Q_PROPERTY(bool dark READ dark WRITE setDark NOTIFY changed)
    Q_PROPERTY(bool active READ active NOTIFY changed)  // a document in a known language
public:
    explicit CodeHighlighter(QObject* parent = nullptr);
    ~CodeHighlighter() override;

    QQuickTextDocument* document() const { return document_; }
    QString language() const { return language_; }
    bool dark() const { return dark_; }
    bool active() const { return syntax_ != nullptr; }
    void setDocument(QQuickTextDocument* document);
    void setLanguage(const QString& language);
    void setDark(bool dark);

signals:
    void changed();

private:
    void rebuild();

    QPointer<QQuickTextDocument> document_;
    QString language_;
    bool dark_ = false;
    // A child of the document (QSyntaxHighlighter's constructor), so it goes with the
    // document; replaced here when the document or the language changes.
    QPointer<CodeSyntax> syntax_;
};

} // namespace arbor::app
