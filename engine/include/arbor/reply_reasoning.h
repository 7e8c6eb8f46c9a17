// A reply's reasoning told apart from its answer. Models that reason before they answer
// write the reasoning into the reply's text: Qwen3, SmolLM3 and the DeepSeek-R1 distills as
// "<think>…</think>answer" (a template's generation prompt may have opened the <think>
// already, so the reply holds only its "…</think>answer"); gpt-oss as harmony messages,
// "<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>final<|message|>answer".
// The engine keeps these markers in the text (they are not end-of-generation tokens); the
// desktop app shows the two parts apart and the local API returns them as
// reasoning_content and content. Text is UTF-8; the markers are ASCII, so a split never
// cuts a character of whole input.
#pragma once

#include "arbor/tokenizer.h"

#include <span>
#include <string>
#include <string_view>

namespace arbor {

struct ReplyParts {
    std::string reasoning;        // markup removed, trimmed; empty when the reply has none
    std::string answer;           // what the reply says
    bool reasoning_open = false;  // a streaming reply still writing its reasoning
};

// Splits a reply's text. `streaming`: the text may grow on, so a trailing part of a marker
// ("<thi", "</th", "<|chan") is held back rather than shown. Invariant while a reply
// streams: each longer prefix of a reply gives a reasoning and an answer that extend those
// of a shorter one, except where a "</think>" with no opening tag turns what came before
// it (until then answer) into reasoning. Text without markers is all answer.
ReplyParts split_reasoning(std::string_view text, bool streaming);

// `s` without the whitespace around it, as the split trims reasoning and answer (and
// prompt_opens_think a prompt's end before "<think>"). ASCII whitespace only: the bytes of
// a multi-byte UTF-8 character are never taken for it.
std::string_view trimmed_space(std::string_view s);

// True when a prompt ending in `prompt_end` (its last few tokens, decoded) leaves a
// <think> open: the template's generation prompt opened it (DeepSeek-R1 distills), so the
// reply starts inside its reasoning and only closes it.
bool prompt_opens_think(std::string_view prompt_end);
// The same, read from the prompt's last ids (a marker is one token in a thinking model's
// vocabulary, up to a few in another's).
bool prompt_opens_think(const Tokenizer& tokenizer, std::span<const TokenId> prompt);

} // namespace arbor
