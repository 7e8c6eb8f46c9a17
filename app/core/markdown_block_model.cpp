#include "markdown_block_model.h"

namespace arbor::app {

MarkdownBlockModel::MarkdownBlockModel(QObject* parent) : QAbstractListModel(parent) {}

int MarkdownBlockModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(blocks_.size());
}

QVariant MarkdownBlockModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
    const MarkdownBlock& b = blocks_[index.row()];
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
    if (markdown == markdown_) return;
    markdown_ = markdown;
    QList<MarkdownBlock> next = splitMarkdown(markdown);
    const int before = int(blocks_.size()), after = int(next.size());
    const int common = std::min(before, after);
    if (after < before) {
        beginRemoveRows({}, after, before - 1);
        blocks_.resize(after);
        endRemoveRows();
    }
    // Rows present before and after: report each run of changed rows once.
    for (int i = 0; i < common;) {
        if (blocks_[i] == next[i]) {
            ++i;
            continue;
        }
        const int first = i;
        for (; i < common && !(blocks_[i] == next[i]); ++i) blocks_[i] = next[i];
        emit dataChanged(index(first), index(i - 1));
    }
    if (after > before) {
        beginInsertRows({}, before, after - 1);
        for (int i = before; i < after; ++i) blocks_.push_back(std::move(next[i]));
        endInsertRows();
    }
    if (after != before) emit countChanged();
    emit markdownChanged();
}

} // namespace arbor::app
