// What a conversation's prompts are composed from, read on the store thread: shared by a
// tab's next turn (ChatSession) and the warm-up of a restored tab (TabWarmer), so that a
// warm-up computes exactly the tokens the next turn will begin with.
#pragma once

#include "arbor/chat_template.h"
#include "arbor/store.h"

#include <optional>
#include <vector>

namespace arbor::app {

// The system prompt (the conversation's own, else the app's default, else none), then
// the messages of the path ending at `below` (none when empty), a reply as the exact ids
// it was generated as, so that each prompt extends the previous one token for token.
std::vector<arbor::ChatMessage> conversationChat(arbor::Store& store, const arbor::ChatFormatter& formatter,
                                                 arbor::ConversationId conversation,
                                                 std::optional<arbor::MessageId> below);

// conversationChat in two parts: what is read from the store (on its thread), and the
// chat made of it, which only tokenizes (on any thread).
struct StoredChat {
    std::string system;                 // empty: none
    std::vector<arbor::Message> path;   // root .. below
};
StoredChat readChat(arbor::Store& store, arbor::ConversationId conversation, std::optional<arbor::MessageId> below);
std::vector<arbor::ChatMessage> encodeChat(const arbor::ChatFormatter& formatter, const StoredChat& stored);

// How the prompt of the next message sent below `leaf` begins: when the path ends with a
// reply, that reply's prompt, the reply, its end of turn and the next user header
// (ChatFormatter::follow_up_prefix); when it ends with a message of the user, the prompt
// for its reply; empty for a path without a message of the user. Of a history longer
// than `context` tokens, the oldest turns are left out as fitContext leaves them out.
std::vector<arbor::TokenId> nextTurnPrefix(arbor::Store& store, const arbor::ChatFormatter& formatter,
                                           arbor::ConversationId conversation, arbor::MessageId leaf, int context);

} // namespace arbor::app
