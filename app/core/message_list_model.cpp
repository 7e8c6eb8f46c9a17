#include "message_list_model.h"

namespace arbor::app {

MessageListModel::MessageListModel(StoreService& store, QObject* parent)
    : QAbstractListModel(parent), store_(store) {
    StoreWorker* w = store_.worker();
    connect(w, &StoreWorker::pathLoaded, this, &MessageListModel::apply, Qt::QueuedConnection);
    connect(w, &StoreWorker::failed, this, &MessageListModel::error, Qt::QueuedConnection);
}

int MessageListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

QVariant MessageListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const MessageRow& row = rows_[index.row()];
    switch (role) {
    case IdRole: return row.id;
    case RoleRole: return row.role;
    case TextRole:
    case Qt::DisplayRole: return row.text;
    case StateRole: return row.state;
    case StatsRole: return row.stats;
    case BranchIndexRole: return row.branchIndex;
    case BranchCountRole: return row.branchCount;
    default: return {};
    }
}

QHash<int, QByteArray> MessageListModel::roleNames() const {
    return {{IdRole, "id"},         {RoleRole, "role"},           {TextRole, "text"},
            {StateRole, "state"},   {StatsRole, "stats"},         {BranchIndexRole, "branchIndex"},
            {BranchCountRole, "branchCount"}};
}

void MessageListModel::load(qint64 conversation, qint64 from) {
    const quint64 ticket = ticket_ = store_.nextTicket();
    store_.post([ticket, conversation, from](StoreWorker& w) { w.loadPath(ticket, conversation, from); });
}

void MessageListModel::previousBranch(int row) { switchBranch(row, -1); }
void MessageListModel::nextBranch(int row) { switchBranch(row, +1); }

void MessageListModel::switchBranch(int row, int offset) {
    if (row < 0 || row >= rows_.size()) return;
    const MessageRow& r = rows_[row];
    if (r.branchIndex + offset < 0 || r.branchIndex + offset >= r.branchCount) return;
    const quint64 ticket = ticket_ = store_.nextTicket();
    const qint64 conversation = conversation_, at = r.id;
    store_.post([=](StoreWorker& w) { w.loadSiblingPath(ticket, conversation, at, offset); });
}

void MessageListModel::appendMessage(const MessageRow& row) {
    const int at = int(rows_.size());
    beginInsertRows({}, at, at);
    rows_.push_back(row);
    endInsertRows();
}

void MessageListModel::appendText(qint64 messageId, const QString& piece) {
    const int i = rowOf(messageId);
    if (i < 0 || piece.isEmpty()) return;
    rows_[i].text += piece;
    const QModelIndex changed = index(i);
    emit dataChanged(changed, changed, {TextRole, Qt::DisplayRole});
}

void MessageListModel::setText(qint64 messageId, const QString& text) {
    const int i = rowOf(messageId);
    if (i < 0 || rows_[i].text == text) return;
    rows_[i].text = text;
    const QModelIndex changed = index(i);
    emit dataChanged(changed, changed, {TextRole, Qt::DisplayRole});
}

void MessageListModel::setFinished(qint64 messageId, const QString& state, const QVariantMap& stats) {
    const int i = rowOf(messageId);
    if (i < 0) return;
    rows_[i].state = state;
    rows_[i].stats = stats;
    const QModelIndex changed = index(i);
    emit dataChanged(changed, changed, {StateRole, StatsRole});
}

int MessageListModel::rowOf(qint64 messageId) const {
    // The streaming reply is the last row; search from the end.
    for (int i = int(rows_.size()) - 1; i >= 0; --i)
        if (rows_[i].id == messageId) return i;
    return -1;
}

void MessageListModel::apply(quint64 ticket, qint64 conversation, const QList<MessageRow>& rows) {
    if (ticket != ticket_) return;  // another model's answer, or a superseded load
    const bool switched = conversation != conversation_;
    beginResetModel();
    conversation_ = conversation;
    rows_ = rows;
    endResetModel();
    if (switched) emit conversationChanged();
    emit loaded();
}

} // namespace arbor::app
