// A model's Jinja chat template taken apart into the fixed text pieces ChatFormatter
// composes prompts from (private to engine/chat). The template is rendered for a few
// conversations whose message texts are unique sentinels; the text between sentinels
// gives the pieces, and the pieces are accepted only when they recompose those renders
// exactly. A template whose turns are not fixed text (a system message moved into the
// last user turn, history rendered differently from a fresh reply) is refused with the
// reason, and the caller renders it whole (chat_template_whole.cpp) or falls back to a
// hard-coded family.
#pragma once

#include "arbor/jinja.h"
#include "arbor/role.h"

#include <ctime>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace arbor {

struct ChatTemplatePieces {
    std::string prefix;            // start of every prompt (BOS text where the template writes it)
    std::string system_header, system_end;
    std::string user_header, user_end;
    std::string assistant_header;  // also the generation prompt
    // How the template opens an assistant message in the history: assistant_header or a
    // start of it (the formatter writes assistant_header, what the reply continued).
    std::string history_assistant_header;
    std::string after_reply;       // end of turn plus separator after an assistant message
    // Text the template writes at the start when the chat has no system message (a
    // default system prompt); not used by the formatter, which sends none.
    std::string default_system;
};

// The role's name in a template's messages.
const char* template_role(Role role);

// One message as a chat template sees it.
struct TemplateMessage {
    const char* role;  // "system", "user" or "assistant"
    std::string_view content;
};

// The variables Hugging Face renders chat templates with: messages, add_generation_prompt,
// bos_token, eos_token, and tools unless `tools` is undefined (a caller without tools),
// beside `globals`.
jinja::Value chat_template_context(const std::vector<TemplateMessage>& messages, bool add_generation_prompt,
                                   const std::string& bos_token, const std::string& eos_token,
                                   const jinja::Value& tools, const jinja::Object& globals = {});

// Globals whose strftime_now shows `now` (local time), as the template's renders of one
// model load do.
jinja::Object strftime_globals(std::time_t now);

// The pieces, or why the template cannot be used (render errors included). `globals`
// adds to or overrides the render context (tests pin strftime_now with it).
std::variant<ChatTemplatePieces, std::string> derive_chat_template_pieces(std::string_view jinja_source,
                                                                          const std::string& bos_token,
                                                                          const std::string& eos_token,
                                                                          const jinja::Object& globals = {});

} // namespace arbor
