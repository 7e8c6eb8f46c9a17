// One conversation as shown: the path from a first message to the selected leaf. Rows
// come from the store worker (queued signals, applied on the GUI thread); a streaming
// reply is appended and grown here by the chat controller as tokens arrive.
#pragma once

#include "store_worker.h"

#include <QAbstractListModel>
#include <QtQml/qqmlregistration.h>

namespace arbor::app {

class MessageListModel : public QAbstractListModel {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("created by the app")
    Q_PROPERTY(qint64 conversationId READ conversationId NOTIFY conversationChanged)
public:
    enum Roles {
        IdRole = Qt::UserRole + 1,
        RoleRole,  // "system", "user", "assistant"
        TextRole,
        StateRole,
        StatsRole,
        BranchIndexRole,
        BranchCountRole,
    };

    // The service must outlive the model.
    explicit MessageListModel(StoreService& store, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    qint64 conversationId() const { return conversation_; }
    // Shows the conversation along its latest leaf, or along the newest leaf below
    // `from` when given.
    Q_INVOKABLE void load(qint64 conversation, qint64 from = 0);
    // Switches the branch at `row` to its previous / next sibling and shows that
    // sibling's newest leaf. Does nothing at the first / last sibling.
    Q_INVOKABLE void previousBranch(int row);
    Q_INVOKABLE void nextBranch(int row);

    // For the chat controller (which also persists them through the worker).
    void appendMessage(const MessageRow& row);
    Q_INVOKABLE void appendText(qint64 messageId, const QString& piece);
    void setText(qint64 messageId, const QString& text);
    Q_INVOKABLE void setFinished(qint64 messageId, const QString& state, const QVariantMap& stats);
    Q_INVOKABLE int rowOf(qint64 messageId) const;
    const MessageRow& row(int i) const { return rows_[i]; }
    // The last message shown (the branch's leaf), 0 when the conversation is empty.
    qint64 leafId() const { return rows_.isEmpty() ? 0 : rows_.back().id; }

signals:
    void conversationChanged();
    void loaded();
    void error(const QString& message);

private:
    void switchBranch(int row, int offset);
    void apply(quint64 ticket, qint64 conversation, const QList<MessageRow>& rows);

    StoreService& store_;
    qint64 conversation_ = 0;
    QList<MessageRow> rows_;
    quint64 ticket_ = 0;
};

} // namespace arbor::app
