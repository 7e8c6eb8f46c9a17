// Which part of a conversation the next prompt holds when all of it does not fit the
// model's context: the system prompt and the newest message always, then as many of the
// latest turns as fit, leaving room for the reply. The oldest turns after the system
// prompt are left out, whole (a user message with the replies below it).
//
// The cut is stable from turn to turn, so the prefix cache keeps serving the history:
// the candidate cuts are fixed points of the history, found from its start by dropping
// whole turns until about a quarter of the context is freed, then again from there. A
// longer history has the same candidates plus later ones, so the next turn keeps the
// previous cut until that no longer fits, then moves on by a quarter of the context at
// once rather than by one turn every time.
#pragma once

#include "arbor/chat_template.h"

#include <optional>
#include <string>
#include <vector>

namespace arbor::app {

struct ContextWindow {
    std::vector<arbor::TokenId> prompt;  // formatter.compose(system + the kept messages)
    int omitted = 0;                     // messages at the start of the history left out
    std::string error;                   // not empty: even the newest message does not fit
    std::string refusal;                 // why the prompt is not in the template's form (ChatFormatter::compose)
};

// The candidate cuts of `history` (indices of the first message kept), ascending: 0,
// then each start of a turn that comes after at least chunkTokens tokens of message
// content since the previous candidate, and last the index of the newest message.
std::vector<int> contextCutCandidates(const std::vector<arbor::ChatMessage>& history, int chunkTokens);

// The prompt for a reply after `history` (oldest first; its last message, the newest,
// is always kept) under `system`. `tail` ids will follow the prompt (a continued reply's
// ids so far). The first candidate whose prompt, tail and `reserve` tokens for the reply
// fit in `context` tokens is taken; when none does, the newest message alone if the
// engine can still take it (the reply gets what is left), else an error.
ContextWindow fitContext(const arbor::ChatFormatter& formatter, const std::optional<arbor::ChatMessage>& system,
                         const std::vector<arbor::ChatMessage>& history, int tail, int context, int reserve);

// The room left for the reply when choosing the cut: its max tokens, but at most a
// quarter of the context (a small context with a large max tokens would otherwise
// leave no room for any history).
int replyReserve(int maxTokens, int context);

} // namespace arbor::app
