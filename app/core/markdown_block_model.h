// A reply's markdown as a list of blocks (see splitMarkdown) for a Repeater. Markdown that
// extends the last (a streaming reply) is split on from where the open block's last line
// starts (MarkdownSplitter): the open block's row changes and new rows are appended; the
// finished blocks are neither split nor compared again and keep their rows (and their
// rendered items). Other markdown is split again whole, and only the rows that differ
// are reported.
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
    // Makes rows first.. equal `next`, reporting only what changed.
    void show(QList<MarkdownBlock> next, qsizetype first);

    QString markdown_;
    MarkdownSplitter splitter_;
    QList<MarkdownBlock> blocks_;  // splitter_.closed() + splitter_.open()
};

} // namespace arbor::app
