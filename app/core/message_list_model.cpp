#include "message_list_model.h"

#include "message_enums.h"

namespace arbor::app {

MessageListModel::MessageListModel(StoreService& store, QObject* parent)
    : QAbstractListModel(parent), store_(store) {}

int MessageListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

QVariant MessageListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const MessageRow& row = rows_[index.row()];
    switch (role) {
    case IdRole: return row.id;
    case RoleRole: return QVariant::fromValue(qml::toQml(row.role));
    case TextRole:
    case Qt::DisplayRole: return row.text;
    case StateRole: return QVariant::fromValue(qml::toQml(row.state));
    case StatsRole: return QVariant::fromValue(row.stats);
    case BranchIndexRole: return row.branchIndex;
    case BranchCountRole: return row.branchCount;
    case ReasoningRole: return parts(index.row()).reasoning;
    case AnswerRole: return parts(index.row()).answer;
    case ReasoningOpenRole: return parts(index.row()).reasoningOpen;
    default: return {};
    }
}

QHash<int, QByteArray> MessageListModel::roleNames() const {
    return {{IdRole, "id"},         {RoleRole, "role"},           {TextRole, "text"},
            {StateRole, "state"},   {StatsRole, "stats"},         {BranchIndexRole, "branchIndex"},
            {BranchCountRole, "branchCount"}, {ReasoningRole, "reasoning"},   {AnswerRole, "answer"},
            {ReasoningOpenRole, "reasoningOpen"}};
}

void MessageListModel::load(qint64 conversation, qint64 from) {
    read(conversation, [conversation, from](arbor::Store& s) { return pathRows(s, conversation, from); });
}

void MessageListModel::previousBranch(int row) { switchBranch(row, -1); }
void MessageListModel::nextBranch(int row) { switchBranch(row, +1); }

void MessageListModel::switchBranch(int row, int offset) {
    if (row < 0 || row >= rows_.size()) return;
    const MessageRow& r = rows_[row];
    if (r.branchIndex + offset < 0 || r.branchIndex + offset >= r.branchCount) return;
    const qint64 conversation = conversation_, at = r.id;
    read(conversation, [=](arbor::Store& s) { return siblingPathRows(s, conversation, at, offset); });
}

void MessageListModel::read(qint64 conversation, std::function<QList<MessageRow>(arbor::Store&)> rows) {
    const quint64 reading = ++reads_;
    store_.call(
        this, std::move(rows),
        [this, reading, conversation](QList<MessageRow> read) {
            if (reading == reads_) apply(conversation, std::move(read));
        },
        [this](const QString& message) { emit error(message); });
}

bool MessageListModel::showBelow(qint64 conversation, qint64 parentId, const QList<MessageRow>& rows) {
    const int keep = parentId == 0 ? 0 : rowOf(parentId) + 1;
    if (keep == 0 && parentId != 0) return false;
    ++reads_;  // a read started earlier would show what this replaces
    if (conversation != conversation_) {
        conversation_ = conversation;
        emit conversationChanged();
    }
    if (keep < rows_.size()) {
        beginRemoveRows({}, keep, int(rows_.size()) - 1);
        rows_.resize(keep);
        endRemoveRows();
    }
    for (const MessageRow& row : rows) appendMessage(row);
    return true;
}

void MessageListModel::appendMessage(const MessageRow& row) {
    const int at = int(rows_.size());
    beginInsertRows({}, at, at);
    rows_.push_back(row);
    endInsertRows();
}

void MessageListModel::changed(int row, const QList<int>& roles) {
    const QModelIndex at = index(row);
    emit dataChanged(at, at, roles);
}

ReplyParts MessageListModel::parts(int i) const {
    const MessageRow& row = rows_[i];
    if (row.role != arbor::Role::Assistant) return {.answer = row.text};
    if (isLive(row)) return liveParts_.parts();
    return splitReasoning(row.text, row.state == arbor::MessageState::streaming);
}

bool MessageListModel::isLive(const MessageRow& row) const {
    return row.id == live_.id && row.state == arbor::MessageState::streaming &&
           live_.state == arbor::MessageState::streaming && row.text.size() == liveParts_.textSize();
}

void MessageListModel::partsChanged(int i, const PartsChange& change, QList<int> roles) {
    if (change.reasoning) roles << ReasoningRole;
    if (change.reasoningOpen) roles << ReasoningOpenRole;
    if (change.answer) {
        roles << AnswerRole;
        if (change.answerGrewFrom >= 0)
            emit answerAppended(rows_[i].id, parts(i).answer.sliced(change.answerGrewFrom));
        else
            emit answerReplaced(rows_[i].id);
    }
    changed(i, roles);
}

void MessageListModel::startLive(qint64 messageId) {
    const int i = rowOf(messageId);
    if (i < 0) return;
    const ReplyParts before = parts(i);
    rows_[i].state = arbor::MessageState::streaming;
    live_ = rows_[i];
    liveParts_ = LiveReplyParts(live_.text);
    partsChanged(i, partsChange(before, parts(i)), {StateRole});
}

void MessageListModel::appendText(qint64 messageId, const QString& piece) {
    if (piece.isEmpty()) return;
    const int i = rowOf(messageId);
    // The live row's parts follow the piece; another row's are split anew, before and after.
    const bool live = i >= 0 && isLive(rows_[i]);
    const ReplyParts before = i < 0 || live ? ReplyParts() : parts(i);
    PartsChange change;
    if (live_.id == messageId) {
        live_.text += piece;
        change = liveParts_.add(piece);
    }
    if (i < 0) return;
    rows_[i].text += piece;
    emit textAppended(messageId, piece);
    partsChanged(i, live ? change : partsChange(before, parts(i)), {TextRole, Qt::DisplayRole});
}

void MessageListModel::setFinished(qint64 messageId, arbor::MessageState state, const ReplyStats& stats) {
    const int i = rowOf(messageId);
    const ReplyParts before = i < 0 ? ReplyParts() : parts(i);  // the live parts, before its state goes
    if (live_.id == messageId) {
        live_.state = state;
        live_.stats = stats;
    }
    if (i < 0) return;
    rows_[i].state = state;
    rows_[i].stats = stats;
    partsChanged(i, partsChange(before, parts(i)), {StateRole, StatsRole});
}

void MessageListModel::releaseLive(qint64 messageId) {
    if (live_.id != messageId) return;
    live_ = {};
    liveParts_ = LiveReplyParts();
}

int MessageListModel::rowOf(qint64 messageId) const {
    // The live reply is the last row; search from the end.
    for (int i = int(rows_.size()) - 1; i >= 0; --i)
        if (rows_[i].id == messageId) return i;
    return -1;
}

void MessageListModel::apply(qint64 conversation, QList<MessageRow> rows) {
    for (MessageRow& row : rows) {
        if (live_.id == 0 || row.id != live_.id) continue;
        row.text = live_.text;
        row.state = live_.state;
        row.stats = live_.stats;
    }
    const bool switched = conversation != conversation_;
    beginResetModel();
    conversation_ = conversation;
    rows_ = std::move(rows);
    endResetModel();
    if (switched) emit conversationChanged();
    emit loaded();
}

} // namespace arbor::app
