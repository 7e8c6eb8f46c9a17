// A reply's reasoning told apart from its answer, as the conversation view shows them: a
// QString face of arbor::split_reasoning (arbor/reply_reasoning.h), which the local API
// uses too. The store keeps the text as generated: the split is a view of it, nothing more.
#pragma once

#include "arbor/reply_split_stream.h"

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

// What changed from one split of a reply to the next.
struct PartsChange {
    bool reasoning = false;
    bool reasoningOpen = false;
    bool answer = false;
    // The answer's former size where it only grew (what follows is new); -1 where it
    // changed otherwise ("</think>" turned what came before it into reasoning).
    qsizetype answerGrewFrom = -1;
};
PartsChange partsChange(const ReplyParts& before, const ReplyParts& after);

// A streaming reply's parts kept as it grows: parts() is splitReasoning(text so far, true)
// after each piece, and a piece costs about its own length (arbor::ReplySplitStream), not
// the whole text's as splitting it anew would (a long reply's last pieces would each
// split, convert and compare some hundred kilobytes).
class LiveReplyParts {
public:
    explicit LiveReplyParts(QStringView text = {});
    PartsChange add(QStringView piece);
    const ReplyParts& parts() const { return parts_; }
    // The text's length so far, in UTF-16 code units (as QString counts).
    qsizetype textSize() const { return size_; }

private:
    arbor::ReplySplitStream split_;
    ReplyParts parts_;
    qsizetype size_ = 0;
};

} // namespace arbor::app
