#include "message_rows.h"

#include <algorithm>

namespace arbor::app {

namespace {

std::vector<arbor::Message> siblingsOf(arbor::Store& store, const arbor::Message& m) {
    return m.parent_id ? store.children(*m.parent_id) : store.roots(m.conversation_id);
}

} // namespace

MessageRow messageRow(arbor::Store& store, const arbor::Message& m) {
    MessageRow row{m.id,
                   m.parent_id.value_or(0),
                   m.role,
                   QString::fromStdString(m.text),
                   m.state,
                   ReplyStats::fromMessage(m.stats),
                   0,
                   1,
                   int(m.token_ids.size())};
    const auto siblings = siblingsOf(store, m);
    row.branchCount = int(siblings.size());
    for (size_t i = 0; i < siblings.size(); ++i)
        if (siblings[i].id == m.id) row.branchIndex = int(i);
    return row;
}

QList<MessageRow> pathRows(arbor::Store& store, qint64 conversation, qint64 from) {
    arbor::MessageId leaf = 0;
    if (from == 0) {
        leaf = store.latest_leaf(conversation).value_or(0);
    } else {
        if (store.message(from).conversation_id != conversation)
            throw arbor::StoreError(arbor::StoreError::Kind::invalid, "message is not in this conversation");
        leaf = from;
        for (auto kids = store.children(leaf); !kids.empty(); kids = store.children(leaf)) leaf = kids.back().id;
    }
    QList<MessageRow> rows;
    if (leaf != 0)
        for (const auto& m : store.path(leaf)) rows.push_back(messageRow(store, m));
    return rows;
}

QList<MessageRow> siblingPathRows(arbor::Store& store, qint64 conversation, qint64 at, int offset) {
    const auto siblings = siblingsOf(store, store.message(at));
    int index = 0;
    for (size_t i = 0; i < siblings.size(); ++i)
        if (siblings[i].id == at) index = int(i);
    const int target = std::clamp(index + offset, 0, int(siblings.size()) - 1);
    return pathRows(store, conversation, siblings[size_t(target)].id);
}

} // namespace arbor::app
