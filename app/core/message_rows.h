// A message as the conversation view shows it, and the store-thread queries that read
// the rows of a branch. They run inside StoreService::call jobs: the answer goes to the
// one model that asked, never to every model.
#pragma once

#include "arbor/store.h"
#include "reply_stats.h"

#include <QList>
#include <QMetaType>
#include <QString>

namespace arbor::app {

struct MessageRow {
    qint64 id = 0;
    qint64 parentId = 0;  // 0: a first message
    arbor::Role role = arbor::Role::User;
    QString text;
    arbor::MessageState state = arbor::MessageState::complete;
    ReplyStats stats;     // a reply's figures, as far as they were measured
    int branchIndex = 0;  // among the message's siblings, in creation order
    int branchCount = 1;
    int tokenCount = 0;   // its token ids (a reply: the ids it was generated as)
};

// The row of `message`, with its place among its siblings.
MessageRow messageRow(arbor::Store& store, const arbor::Message& message);

// The path root .. leaf, where leaf is the newest leaf below `from` (following the
// newest child at each step), or the conversation's latest leaf when from is 0.
// StoreError when `from` is not a message of the conversation.
QList<MessageRow> pathRows(arbor::Store& store, qint64 conversation, qint64 from);

// Siblings of message `at`: the path through the one `offset` steps away (clamped).
QList<MessageRow> siblingPathRows(arbor::Store& store, qint64 conversation, qint64 at, int offset);

} // namespace arbor::app

Q_DECLARE_METATYPE(arbor::app::MessageRow)
