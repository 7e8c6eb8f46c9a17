// A reply's reasoning told apart from its answer, as the conversation view shows them: a
// QString face of arbor::split_reasoning (arbor/reply_reasoning.h), which the local API
// uses too. The store keeps the text as generated: the split is a view of it, nothing more.
#pragma once

#include <QString>
#include <QStringView>

namespace arbor::app {

struct ReplyParts {
    QString reasoning;           // markup removed, trimmed; empty when the reply has none
    QString answer;              // what the reply says, as markdown
    bool reasoningOpen = false;  // a streaming reply still writing its reasoning
};

// arbor::split_reasoning on the text's UTF-8 (see there for `streaming` and the invariant
// a streaming reply keeps).
ReplyParts splitReasoning(QStringView text, bool streaming);

} // namespace arbor::app
