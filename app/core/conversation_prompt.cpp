#include "conversation_prompt.h"

#include "app_settings.h"

#include <algorithm>

namespace arbor::app {

std::vector<arbor::ChatMessage> conversationChat(arbor::Store& s, const arbor::ChatFormatter& formatter,
                                                 arbor::ConversationId conversation,
                                                 std::optional<arbor::MessageId> below) {
    std::vector<arbor::ChatMessage> chat;
    std::string system = s.conversation_settings(conversation).system_prompt;
    if (system.empty()) system = s.app_setting(AppSettings::kDefaultSystemPromptKey).value_or("");
    if (!system.empty()) chat.push_back({arbor::Role::System, formatter.encode_content(system)});
    if (below) {
        for (const auto& m : s.path(*below))
            chat.push_back({m.role, m.token_ids.empty() && !m.text.empty() ? formatter.encode_content(m.text)
                                                                           : m.token_ids});
    }
    return chat;
}

std::vector<arbor::TokenId> nextTurnPrefix(arbor::Store& s, const arbor::ChatFormatter& formatter,
                                           arbor::ConversationId conversation, arbor::MessageId leaf) {
    std::vector<arbor::ChatMessage> chat = conversationChat(s, formatter, conversation, leaf);
    if (std::none_of(chat.begin(), chat.end(), [](const auto& m) { return m.role == arbor::Role::User; })) return {};
    if (chat.back().role != arbor::Role::Assistant) return formatter.compose(chat);
    const std::vector<arbor::TokenId> reply = std::move(chat.back().content);
    chat.pop_back();
    return formatter.follow_up_prefix(formatter.compose(chat), reply);
}

} // namespace arbor::app
