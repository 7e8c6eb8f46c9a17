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
    qsizetype unchanged = splitter_.closed().size();
    // A streaming reply grows at its end: the splitter reads on from its last line. Any
    // other change (an edit, a regenerated reply, another branch) is split again whole.
    if (markdown.size() < markdown_.size() || !markdown.startsWith(markdown_)) {
        splitter_.clear();
        unchanged = 0;
    }
    markdown_ = markdown;
    splitter_.extend(markdown);
    show(splitter_.closed().sliced(unchanged) + splitter_.open(), unchanged);
    emit markdownChanged();
}

void MarkdownBlockModel::show(QList<MarkdownBlock> next, qsizetype first) {
    const qsizetype before = blocks_.size(), after = first + next.size(), common = std::min(before, after);
    if (after < before) {
        beginRemoveRows({}, int(after), int(before - 1));
        blocks_.resize(after);
        endRemoveRows();
    }
    // Rows present before and after: report each run of changed rows once.
    for (qsizetype i = first; i < common;) {
        if (blocks_[i] == next[i - first]) {
            ++i;
            continue;
        }
        const qsizetype run = i;
        for (; i < common && !(blocks_[i] == next[i - first]); ++i) blocks_[i] = std::move(next[i - first]);
        emit dataChanged(index(int(run)), index(int(i - 1)));
    }
    if (after > before) {
        beginInsertRows({}, int(before), int(after - 1));
        for (qsizetype i = before; i < after; ++i) blocks_.push_back(std::move(next[i - first]));
        endInsertRows();
    }
    if (after != before) emit countChanged();
}

} // namespace arbor::app
