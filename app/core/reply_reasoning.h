// A reply's reasoning told apart from its answer, as the conversation view shows them.
// Models that reason before they answer write the reasoning into the reply's text:
// Qwen3, SmolLM3 and the DeepSeek-R1 distills as "<think>…</think>answer" (a template's
// generation prompt may have opened the <think> already, so the reply holds only its
// "…</think>answer"); gpt-oss as harmony messages,
// "<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>answer".
// The engine keeps these markers in the text (they are not end-of-generation tokens), and
// the store keeps the text as generated: the split is a view of it, nothing more.
#pragma once

#include <QString>
#include <QStringView>

namespace arbor::app {

struct ReplyParts {
    QString reasoning;           // markup removed, trimmed; empty when the reply has none
    QString answer;              // what the reply says, as markdown
    bool reasoningOpen = false;  // a streaming reply still writing its reasoning
};

// Splits a reply's text. `streaming`: the text may grow on, so a trailing part of a marker
// ("<thi", "</th", "<|chan") is held back rather than shown. Invariant while a reply
// streams: each longer prefix of a reply gives an answer that extends the answer of a
// shorter one, except where a "</think>" with no opening tag turns what came before it
// into reasoning. Text without markers is all answer.
ReplyParts splitReasoning(QStringView text, bool streaming);

} // namespace arbor::app
