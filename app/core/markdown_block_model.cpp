#include "markdown_block_model.h"

namespace arbor::app {

MarkdownBlockModel::MarkdownBlockModel(QObject* parent) : QAbstractListModel(parent) {}

int MarkdownBlockModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

QVariant MarkdownBlockModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const MarkdownBlock& b = rows_[index.row()].block;
    switch (role) {
    case KindRole: return b.kind == MarkdownBlock::Kind::Code ? QStringLiteral("code") : QStringLiteral("text");
    case TextRole:
    case Qt::DisplayRole: return b.text;
    case LanguageRole: return b.language;
    default: return {};
    }
}

QHash<int, QByteArray> MarkdownBlockModel::roleNames() const {
    return {{KindRole, "kind"}, {TextRole, "text"}, {LanguageRole, "language"}};
}

void MarkdownBlockModel::setMarkdown(const QString& markdown) {
    const QString& shown = splitter_.text();
    if (markdown.size() == shown.size() && markdown == shown) return;
    qsizetype unchanged = splitter_.closed().size();
    // A streaming reply grows at its end: the splitter reads on from its last line. Any
    // other change (an edit, a regenerated reply, another branch) is split again whole.
    if (markdown.size() < shown.size() || !markdown.startsWith(shown)) {
        splitter_.clear();
        unchanged = 0;
    }
    splitter_.extend(markdown);
    show(splitter_.closed().sliced(unchanged) + splitter_.open(), unchanged);
    emit markdownChanged();
}

void MarkdownBlockModel::append(QStringView piece) {
    if (piece.isEmpty()) return;
    const qsizetype unchanged = splitter_.closed().size();
    splitter_.append(piece);
    show(splitter_.closed().sliced(unchanged) + splitter_.open(), unchanged);
    emit markdownChanged();
}

void MarkdownBlockModel::setMessages(MessageListModel* messages) {
    if (messages == messages_) return;
    disconnect(appended_);
    disconnect(replaced_);
    disconnect(reset_);
    messages_ = messages;
    if (messages) {
        appended_ = connect(messages, &MessageListModel::answerAppended, this, [this](qint64 id, const QString& piece) {
            if (id == messageId_) append(piece);
        });
        replaced_ = connect(messages, &MessageListModel::answerReplaced, this, [this](qint64 id) {
            if (id == messageId_) follow();
        });
        // A reload shows the store's copy of each message (the same text but for a reply
        // that streamed on meanwhile).
        reset_ = connect(messages, &QAbstractItemModel::modelReset, this, &MarkdownBlockModel::follow);
    }
    follow();
    emit sourceChanged();
}

void MarkdownBlockModel::setMessageId(qint64 id) {
    if (id == messageId_) return;
    messageId_ = id;
    follow();
    emit sourceChanged();
}

void MarkdownBlockModel::follow() {
    if (!messages_ || messageId_ == 0) return;
    const int row = messages_->rowOf(messageId_);
    setMarkdown(row < 0 ? QString() : messages_->parts(row).answer);
}

qreal MarkdownBlockModel::measuredHeight(int row, qreal width) const {
    const Row& r = rows_[row];
    return r.height >= 0 && r.width == width ? r.height : -1;
}

qreal MarkdownBlockModel::lastHeight(int row, qreal* width) const {
    *width = rows_[row].width;
    return rows_[row].height;
}

void MarkdownBlockModel::setMeasuredHeight(int row, qreal width, qreal height) {
    rows_[row].height = height;
    rows_[row].width = width;
}

void MarkdownBlockModel::show(QList<MarkdownBlock> next, qsizetype first) {
    const qsizetype before = rows_.size(), after = first + next.size(), common = std::min(before, after);
    if (after < before) {
        beginRemoveRows({}, int(after), int(before - 1));
        rows_.resize(after);
        endRemoveRows();
    }
    // Rows present before and after: report each run of changed rows once.
    for (qsizetype i = first; i < common;) {
        if (rows_[i].block == next[i - first]) {
            ++i;
            continue;
        }
        const qsizetype run = i;
        for (; i < common && !(rows_[i].block == next[i - first]); ++i) rows_[i] = {std::move(next[i - first])};
        emit dataChanged(index(int(run)), index(int(i - 1)));
    }
    if (after > before) {
        beginInsertRows({}, int(before), int(after - 1));
        for (qsizetype i = before; i < after; ++i) rows_.push_back({std::move(next[i - first])});
        endInsertRows();
    }
    if (after != before) emit countChanged();
}

} // namespace arbor::app
