// One conversation as shown: the path from a first message to the selected leaf. Paths
// are read on the store thread (message_rows.h) and applied here on the GUI thread. The
// model owns the live reply row: the chat session appends a turn's rows, streams the
// reply's text into its row and marks it finished; a path read while the reply is live
// shows the row as the model has it, not the store's copy (which lags by up to a flush).
#pragma once

#include "message_rows.h"
#include "reply_reasoning.h"
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
        RoleRole,  // qml::MessageRole::Value
        TextRole,
        StateRole,  // qml::MessageState::Value
        StatsRole,  // ReplyStats
        BranchIndexRole,
        BranchCountRole,
        // A reply's text split as splitReasoning does (reply_reasoning.h); another
        // message's text is all answer.
        ReasoningRole,
        AnswerRole,
        ReasoningOpenRole,
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

    // For the chat session (which also persists them through the store).
    // Shows `rows` of `conversation` below the message `parentId` (0: at the top), in
    // place of what was below it. False when that message is not shown (the model shows
    // another branch).
    bool showBelow(qint64 conversation, qint64 parentId, const QList<MessageRow>& rows);
    void appendMessage(const MessageRow& row);
    // The row of messageId becomes the live reply: 'streaming' until setFinished.
    void startLive(qint64 messageId);
    void appendText(qint64 messageId, const QString& piece);
    void setFinished(qint64 messageId, arbor::MessageState state, const ReplyStats& stats);
    // The store holds the finished reply now: later reads show the store's copy.
    void releaseLive(qint64 messageId);
    int rowOf(qint64 messageId) const;
    const MessageRow& row(int i) const { return rows_[i]; }
    // Row i's text split into reasoning and answer.
    ReplyParts parts(int i) const;
    // The last message shown (the branch's leaf), 0 when the conversation is empty.
    qint64 leafId() const { return rows_.isEmpty() ? 0 : rows_.back().id; }

signals:
    void conversationChanged();
    void loaded();
    // The shown message `messageId` grew by `piece` (its row's text changes too): a view
    // of a streaming reply takes the piece rather than the whole text again.
    void textAppended(qint64 messageId, const QString& piece);
    // The answer part of the shown message `messageId` grew by `piece`, or (answerReplaced)
    // changed otherwise: "</think>" turned what came before it into reasoning.
    void answerAppended(qint64 messageId, const QString& piece);
    void answerReplaced(qint64 messageId);
    void error(const QString& message);

private:
    void switchBranch(int row, int offset);
    void read(qint64 conversation, std::function<QList<MessageRow>(arbor::Store&)> rows);
    void apply(qint64 conversation, QList<MessageRow> rows);
    void changed(int row, const QList<int>& roles);
    // Row i's text or state changed: reports `roles` and the parts that changed.
    void partsChanged(int i, const PartsChange& change, QList<int> roles);
    // Row `row` is the live reply streaming, its parts those liveParts_ keeps.
    bool isLive(const MessageRow& row) const;

    StoreService& store_;
    qint64 conversation_ = 0;
    QList<MessageRow> rows_;
    quint64 reads_ = 0;  // reads started; only the newest one's answer is applied
    // The live reply while it streams and until the store has its end (0: none).
    MessageRow live_;
    // Its parts while it streams, kept piece by piece rather than split anew at each.
    LiveReplyParts liveParts_;
};

} // namespace arbor::app
