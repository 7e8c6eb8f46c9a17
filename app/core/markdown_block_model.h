// A reply's markdown as a list of blocks (see splitMarkdown) for MarkdownBlockList. Text
// that grows at its end (a streaming reply: append(), or a message it follows) is split
// on from where the open block's last line starts (MarkdownSplitter): the open block's
// row changes and new rows are appended; the finished blocks are neither split nor
// compared again and keep their rows (and their items). Other markdown is split again
// whole, and only the rows that differ are reported.
//
// Each row also caches the height its item was measured at and the width it was laid out
// to, so a view can place the blocks it has no items for (MarkdownBlockList). A row whose
// text changes forgets its height.
#pragma once

#include "markdown_blocks.h"
#include "message_list_model.h"

#include <QAbstractListModel>
#include <QPointer>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class MarkdownBlockModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    Q_PROPERTY(QString markdown READ markdown WRITE setMarkdown NOTIFY markdownChanged)
    // The message whose answer (MessageListModel::parts) the model shows, fed by appends as
    // the message streams (the whole answer is read once, when the message is set, or again
    // when it changes otherwise than at its end); instead of `markdown`.
    Q_PROPERTY(arbor::app::MessageListModel* messages READ messages WRITE setMessages NOTIFY sourceChanged)
    Q_PROPERTY(qint64 messageId READ messageId WRITE setMessageId NOTIFY sourceChanged)
    Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
public:
    enum Roles { KindRole = Qt::UserRole + 1, TextRole, LanguageRole };

    explicit MarkdownBlockModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    const QString& markdown() const { return splitter_.text(); }
    void setMarkdown(const QString& markdown);
    // The markdown grows by `piece`: costs what the piece and the open block cost, not
    // what the text before them does.
    void append(QStringView piece);

    MessageListModel* messages() const { return messages_; }
    void setMessages(MessageListModel* messages);
    qint64 messageId() const { return messageId_; }
    void setMessageId(qint64 id);

    const MarkdownBlock& block(int row) const { return rows_[row].block; }
    // The height measured for `row` at `width`, or -1 when it has none at that width.
    qreal measuredHeight(int row, qreal width) const;
    // The height measured for `row` at some width (-1: never), and that width.
    qreal lastHeight(int row, qreal* width) const;
    void setMeasuredHeight(int row, qreal width, qreal height);

signals:
    void markdownChanged();
    void sourceChanged();
    void countChanged();

private:
    struct Row {
        MarkdownBlock block;
        qreal height = -1, width = 0;  // as measured (height -1: not measured)
    };
    // Makes rows first.. equal `next`, reporting only what changed.
    void show(QList<MarkdownBlock> next, qsizetype first);
    // Shows the text of the message followed, if the model shows it.
    void follow();

    MarkdownSplitter splitter_;
    QList<Row> rows_;  // splitter_.closed() + splitter_.open()
    QPointer<MessageListModel> messages_;
    qint64 messageId_ = 0;
    QMetaObject::Connection appended_, replaced_, reset_;
};

} // namespace arbor::app
