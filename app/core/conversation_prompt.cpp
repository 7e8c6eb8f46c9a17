#include "conversation_prompt.h"

#include "app_settings.h"
#include "chat_session.h"
#include "context_window.h"

#include <algorithm>

namespace arbor::app {

StoredChat readChat(arbor::Store& s, arbor::ConversationId conversation, std::optional<arbor::MessageId> below) {
    StoredChat stored;
    stored.system = s.conversation_settings(conversation).system_prompt;
    if (stored.system.empty()) stored.system = s.app_setting(AppSettings::kDefaultSystemPromptKey).value_or("");
    if (below) stored.path = s.path(*below);
    return stored;
}

std::vector<arbor::ChatMessage> encodeChat(const arbor::ChatFormatter& formatter, const StoredChat& stored) {
    std::vector<arbor::ChatMessage> chat;
    if (!stored.system.empty()) chat.push_back({arbor::Role::System, formatter.encode_content(stored.system)});
    for (const auto& m : stored.path)
        chat.push_back({m.role, m.token_ids.empty() && !m.text.empty() ? formatter.encode_content(m.text)
                                                                       : m.token_ids});
    return chat;
}

std::vector<arbor::ChatMessage> conversationChat(arbor::Store& s, const arbor::ChatFormatter& formatter,
                                                 arbor::ConversationId conversation,
                                                 std::optional<arbor::MessageId> below) {
    return encodeChat(formatter, readChat(s, conversation, below));
}

std::vector<arbor::TokenId> nextTurnPrefix(arbor::Store& s, const arbor::ChatFormatter& formatter,
                                           arbor::ConversationId conversation, arbor::MessageId leaf, int context) {
    std::vector<arbor::ChatMessage> chat = conversationChat(s, formatter, conversation, leaf);
    if (std::none_of(chat.begin(), chat.end(), [](const auto& m) { return m.role == arbor::Role::User; })) return {};
    // Left out what the next turn's prompt would leave out (ChatSession cuts the same way):
    // its cut candidates are fixed points of the history, so a short next message keeps
    // this cut.
    std::optional<arbor::ChatMessage> system;
    if (chat.front().role == arbor::Role::System) {
        system = std::move(chat.front());
        chat.erase(chat.begin());
    }
    const int maxTokens = s.conversation_settings(conversation).max_tokens.value_or(ChatSession::kDefaultMaxTokens);
    const ContextWindow window = fitContext(formatter, system, chat, 0, context, replyReserve(maxTokens, context));
    if (!window.error.empty()) return {};
    chat.erase(chat.begin(), chat.begin() + window.omitted);
    if (system) chat.insert(chat.begin(), std::move(*system));
    if (chat.back().role != arbor::Role::Assistant) return formatter.compose(chat);
    const std::vector<arbor::TokenId> reply = std::move(chat.back().content);
    chat.pop_back();
    return formatter.follow_up_prefix(chat, reply);
}

} // namespace arbor::app
