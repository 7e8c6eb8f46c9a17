// A reply's markdown as a list of blocks (see splitMarkdown) for a Repeater. Setting new
// markdown re-splits it and reports only the blocks that differ: while a reply streams,
// the finished blocks keep their rows (and their rendered items), and only the growing
// last block is rendered again.
#pragma once

#include "markdown_blocks.h"

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class MarkdownBlockModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(QString markdown READ markdown WRITE setMarkdown NOTIFY markdownChanged)
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Roles { KindRole = Qt::UserRole + 1, TextRole, LanguageRole };

    explicit MarkdownBlockModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    QString markdown() const { return markdown_; }
    void setMarkdown(const QString& markdown);

signals:
    void markdownChanged();
    void countChanged();

private:
    QString markdown_;
    QList<MarkdownBlock> blocks_;
};

} // namespace arbor::app
