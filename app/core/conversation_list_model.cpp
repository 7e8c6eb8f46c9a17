#include "conversation_list_model.h"

#include <QDateTime>

namespace arbor::app {

ConversationListModel::ConversationListModel(StoreService& store, QObject* parent)
    : QAbstractListModel(parent), store_(store) {
    StoreWorker* w = store_.worker();
    connect(w, &StoreWorker::conversationsListed, this, &ConversationListModel::apply, Qt::QueuedConnection);
    connect(w, &StoreWorker::conversationsChanged, this, &ConversationListModel::reload, Qt::QueuedConnection);
    connect(w, &StoreWorker::conversationCreated, this, &ConversationListModel::created, Qt::QueuedConnection);
    connect(w, &StoreWorker::failed, this, &ConversationListModel::error, Qt::QueuedConnection);
}

int ConversationListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

QVariant ConversationListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const ConversationRow& row = rows_[index.row()];
    switch (role) {
    case IdRole: return row.id;
    case TitleRole:
    case Qt::DisplayRole: return row.title;
    case UpdatedAtRole: return QDateTime::fromMSecsSinceEpoch(row.updatedAt);
    default: return {};
    }
}

QHash<int, QByteArray> ConversationListModel::roleNames() const {
    return {{IdRole, "id"}, {TitleRole, "title"}, {UpdatedAtRole, "updatedAt"}};
}

void ConversationListModel::setFilter(const QString& filter) {
    if (filter == filter_) return;
    filter_ = filter;
    emit filterChanged();
    reload();
}

void ConversationListModel::reload() {
    const quint64 ticket = ticket_ = store_.nextTicket();
    const QString filter = filter_;
    store_.post([ticket, filter](StoreWorker& w) { w.listConversations(ticket, filter); });
}

void ConversationListModel::create(const QString& title) {
    store_.post([title](StoreWorker& w) { w.createConversation(title); });
}

void ConversationListModel::rename(qint64 id, const QString& title) {
    store_.post([id, title](StoreWorker& w) { w.renameConversation(id, title); });
}

void ConversationListModel::remove(qint64 id) {
    store_.post([id](StoreWorker& w) { w.deleteConversation(id); });
}

int ConversationListModel::rowOf(qint64 id) const {
    for (int i = 0; i < rows_.size(); ++i)
        if (rows_[i].id == id) return i;
    return -1;
}

void ConversationListModel::hide(qint64 id) {
    hidden_.insert(id);
    if (const int row = rowOf(id); row >= 0) {
        beginRemoveRows({}, row, row);
        rows_.removeAt(row);
        endRemoveRows();
    }
}

void ConversationListModel::unhide(qint64 id) {
    if (hidden_.remove(id)) reload();
}

void ConversationListModel::apply(quint64 ticket, const QList<ConversationRow>& rows) {
    if (ticket != ticket_) return;  // a newer reload is on its way
    beginResetModel();
    rows_.clear();
    for (const ConversationRow& row : rows)
        if (!hidden_.contains(row.id)) rows_.append(row);
    endResetModel();
    emit loaded();
}

} // namespace arbor::app
