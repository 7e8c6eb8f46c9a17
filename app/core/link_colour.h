// Gives the links of a QML TextEdit's markdown a colour of the theme. Qt's markdown
// import colours links with the application palette of the moment it parses the text
// (a fixed blue, unreadable on a dark background); MarkdownView sets the document and
// the theme's link colour, and calls apply() whenever its text was parsed again.
#pragma once

#include <QColor>
#include <QObject>
#include <QPointer>
#include <QQuickTextDocument>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class LinkColour : public QObject {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(QQuickTextDocument* document READ document WRITE setDocument NOTIFY changed)
    Q_PROPERTY(QColor color READ color WRITE setColor NOTIFY changed)
public:
    explicit LinkColour(QObject* parent = nullptr);

    QQuickTextDocument* document() const { return document_; }
    QColor color() const { return color_; }
    void setDocument(QQuickTextDocument* document);
    void setColor(const QColor& color);

    // Colours every link fragment that does not have the colour yet (so a second call
    // changes nothing and signals nothing).
    Q_INVOKABLE void apply();

signals:
    void changed();

private:
    QPointer<QQuickTextDocument> document_;
    QColor color_;
};

} // namespace arbor::app
