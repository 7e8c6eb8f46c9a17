// Chat prompts composed from token ids. Template pieces (role headers, turn markers,
// BOS) are tokenized on their own with special-token parsing; message content is
// tokenized on its own without it, or is the exact ids the model generated. So turn N+1's
// prompt starts with exactly turn N's prompt followed by the reply's ids, and a follow-up
// reuses every cached token.
//
// Rendered as text (with a tokenizer that round-trips), each family matches its
// reference Jinja template:
//   ChatML   <|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n
//   Llama3   <|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>
//            <|start_header_id|>assistant<|end_header_id|>\n\n
//   Llama2   <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nHi [/INST] reply </s><s>[INST] ... [/INST]
//   Gemma    <bos><start_of_turn>user\nsys\n\nHi<end_of_turn>\n<start_of_turn>model\n
//   Zephyr   <|system|>\nsys</s>\n<|user|>\nHi</s>\n<|assistant|>\n
// Llama 2 wraps an assistant reply in spaces (" reply "); a reply the model generated
// carries its own leading space, so the formatter adds none and the content is used as
// given. Llama 2 and Gemma have no system role: system messages are folded into the next
// user message the way their templates do (a system message with no user message right
// after it becomes a user turn of its own).
//
// A model's own Jinja template gives the same kind of pieces, read off its renders
// (chat_template_pieces.h), with a system role of its own wherever the template has one.
// A template whose turns are not fixed pieces but that renders (gpt-oss opens replies in
// the history with more than its generation prompt, Mistral Nemo moves the system text
// into the last user turn) is rendered whole for every prompt instead: all messages with
// placeholder texts, the text around them tokenized with special tokens and each
// message's ids put in its placeholder's place. The exact continuation then holds only as
// far as the template keeps earlier text (see follow_up_prefix).
#pragma once

#include "arbor/role.h"

#include "arbor/tokenizer.h"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace arbor {

namespace jinja {
class CompiledTemplate;
class Value;
} // namespace jinja

enum class ChatTemplateKind { ChatML, Llama3, Llama2, Gemma, Zephyr };

std::string_view chat_template_name(ChatTemplateKind kind);

// Detects the family from the GGUF's tokenizer.chat_template text (Jinja source).
// Missing or unknown: logs a warning and returns ChatML; *recognised tells which.
ChatTemplateKind detect_chat_template(std::string_view jinja_source, bool* recognised = nullptr);
// The family whose turn marker the template text contains, without logging; nullopt
// when none does.
std::optional<ChatTemplateKind> match_chat_template_family(std::string_view jinja_source);

struct ChatMessage {
    Role role;
    std::vector<TokenId> content;
};

class ChatFormatter {
public:
    // Keeps a reference to the tokenizer, which must outlive the formatter.
    ChatFormatter(const Tokenizer& tokenizer, ChatTemplateKind kind);
    // The model's own Jinja template (tokenizer.chat_template): taken apart into fixed
    // text pieces where its turns are such (see chat_template_pieces.h), else rendered
    // whole for every prompt where it renders system, user and assistant messages (each
    // message's text once); otherwise the family detect_chat_template picks, with a
    // warning naming the reason (fallback_warning()). With pieces, a default system prompt
    // the template adds to chats without one is not sent, as with the families. The
    // template's strftime_now shows `now` (the load by default), so prompts do not change
    // under a conversation when the date does.
    ChatFormatter(const Tokenizer& tokenizer, std::string_view jinja_source, std::time_t now = std::time(nullptr));

    // The family in use, or for the model's own template the family its markers match
    // (ChatML when none).
    ChatTemplateKind kind() const { return kind_; }
    bool uses_model_template() const { return uses_model_template_; }
    // The model's template is used and rendered whole for each prompt (not in pieces).
    bool renders_whole() const { return whole_; }
    // Why the model's template is not used, or is rendered whole (and what a follow-up
    // then recomputes); empty when it is used in pieces (or a family was asked for).
    const std::string& template_note() const { return template_note_; }
    // The sentence to show the user when the model's own template is not used (none in
    // the file, or one that cannot be used), naming the reason and the format used
    // instead; empty when the template is used, when a family was asked for, and when the
    // family fallen back to composes exactly the template's renders (Gemma 3's).
    const std::string& fallback_warning() const { return fallback_warning_; }

    // Message text -> ids, special-token texts kept as plain text.
    std::vector<TokenId> encode_content(std::string_view text) const;

    // The full prompt for generating the next assistant reply after `messages`. With
    // `refusal`, also why the prompt does not follow the model's template, one sentence
    // for the user: rendered whole, the template refused these messages (Nemo's roles
    // must alternate) and the family composed them; empty where the template's own form
    // is used.
    std::vector<TokenId> compose(const std::vector<ChatMessage>& messages, std::string* refusal = nullptr) const;

    // How the next prompt begins once `reply` (the generated ids) answered compose(messages):
    // everything up to where the content of the next user message starts. For any
    // messages M and user ids U: compose(M + [reply, U]) starts with
    // follow_up_prefix(M, reply) followed by U.
    // In pieces (and with a family) that is compose(M), the reply, its end of turn and the
    // next user header: compose(M + [reply, U]) starts with compose(M) + reply. Rendered
    // whole, it is the render of M + [reply, U] up to U, which keeps compose(M) only as
    // far as the template keeps earlier text: gpt-oss renders a reply in the history as
    // its final message alone, so a follow-up shares all up to the reply's start; Mistral
    // Nemo keeps the reply too, but moves the system text from turn to turn. Where the
    // template refuses M + [reply, U], compose() falls back to the family, and so does
    // this: the family's follow-up of M (its refusal does not depend on U's words, which
    // render as the same placeholder).
    std::vector<TokenId> follow_up_prefix(const std::vector<ChatMessage>& messages,
                                          const std::vector<TokenId>& reply) const;
    // The same from the prompt compose() made, for callers that kept only that: in pieces
    // or with a family the prompt, the reply, its end of turn and the next user header.
    // Rendered whole, the prompt does not tell what the template keeps: empty (a prefix of
    // every prompt).
    std::vector<TokenId> follow_up_prefix(const std::vector<TokenId>& prompt, const std::vector<TokenId>& reply) const;

    // The prompt for `messages` with `tools` (a list of tool definitions, as OpenAI's
    // requests carry them) shown to the model the way its own template shows them. The
    // whole conversation is rendered with placeholder message texts; the text around them
    // is tokenized with special tokens and each message's ids take its placeholder's place
    // (a reply's stored ids as the history shows them: without a closing stop id, and for
    // gpt-oss from its final message on). Unlike compose() in pieces, a follow-up's prompt
    // need not start with this one (templates put tools in the first turn and may move
    // text about).
    // Throws arbor::Error when the model's own template is not in use, when it renders
    // the same without the tools (it does not show them), or when it fails to render.
    std::vector<TokenId> compose_with_tools(const std::vector<ChatMessage>& messages, const jinja::Value& tools) const;

    // End-of-turn ids of this template (plus the tokenizer's end-of-sequence id). An
    // assistant message ending with one of them gets no end-of-turn marker appended
    // (rendered whole, the id is left out: the template writes its own end). Rendered
    // whole: the id the template closes a final reply with, and the end-of-generation ids
    // among the <|...|> markers its text names (gpt-oss: <|return|> and <|call|>, not the
    // <|end|> that closes its analysis message), then EOS.
    std::vector<TokenId> stop_tokens() const;

private:
    void init_family(ChatTemplateKind kind);
    // Whether the family in use composes, as text, exactly the template's renders of a
    // few conversations (then falling back to it changes nothing the model sees).
    bool family_renders_as(std::string_view jinja_source, const std::string& bos_text, const std::string& eos_text) const;
    void init_stop_tokens(std::string_view name);
    // Whole-template mode (chat_template_whole.cpp). init_whole checks that the template
    // renders a few conversations with each placeholder once; false with *reason if not.
    bool init_whole(std::string_view jinja_source, std::string* reason);
    // The template's render of `messages` with placeholder texts, the BOS/EOS texts, the
    // tools unless undefined, and strftime_now at now_. Throws jinja::JinjaError.
    std::string render_placeholders(const std::vector<ChatMessage>& messages, const jinja::Value& tools,
                                    bool generation_prompt = true) const;
    // `rendered` (from render_placeholders) tokenized with special tokens between the
    // placeholders, each message's ids in its placeholder's place, in the order the
    // placeholders come. With `stop_at`, it ends where that message's placeholder starts.
    // Throws arbor::Error when a placeholder is not there exactly once.
    std::vector<TokenId> splice(const std::string& rendered, const std::vector<ChatMessage>& messages,
                                std::optional<size_t> stop_at = std::nullopt) const;
    // The ids of a reply as a whole render shows it in the history (see reply_opening_).
    std::vector<TokenId> history_reply(const std::vector<TokenId>& content) const;
    std::vector<ChatMessage> shown_in_history(const std::vector<ChatMessage>& messages) const;
    std::vector<TokenId> compose_whole(const std::vector<ChatMessage>& messages, std::string* refusal) const;
    std::vector<TokenId> compose_pieces(const std::vector<ChatMessage>& messages) const;
    // In pieces: `prompt` (from compose_pieces), the reply, its end of turn and the next user header.
    std::vector<TokenId> pieces_follow_up(std::vector<TokenId> prompt, const std::vector<TokenId>& reply) const;
    std::vector<TokenId> special(std::string_view text) const;
    bool ends_turn(const std::vector<TokenId>& content) const;
    void append_system(std::vector<TokenId>& out, const std::vector<TokenId>& content) const;
    void append_user(std::vector<TokenId>& out, const std::vector<const std::vector<TokenId>*>& systems,
                     const std::vector<TokenId>* content) const;
    void append_assistant(std::vector<TokenId>& out, const std::vector<TokenId>& content) const;
    void append_reply(std::vector<TokenId>& out, const std::vector<TokenId>& content) const;  // after the header

    const Tokenizer& tokenizer_;
    ChatTemplateKind kind_ = ChatTemplateKind::ChatML;
    bool uses_model_template_ = false;
    std::string template_note_;
    std::string fallback_warning_;
    // The model's own template, when in use, and the BOS/EOS texts it is rendered with.
    std::shared_ptr<const jinja::CompiledTemplate> template_;
    std::string bos_text_, eos_text_;
    std::time_t now_ = 0;  // what the template's strftime_now shows
    // Rendered whole (the family's pieces stay as the fallback for a conversation the
    // template refuses). reply_opening_: what the history writes before a reply's text
    // beyond the generation prompt (gpt-oss: <|channel|>final<|message|>; whitespace alone,
    // as Mistral v0.3's space, is no opening). A reply that
    // wrote it itself (after its analysis) is shown from its last occurrence on, as the
    // template drops the analysis of earlier replies.
    bool whole_ = false;
    std::vector<TokenId> reply_opening_;
    // Template pieces, tokenized once. A turn renders as header + content + end_of_turn
    // + separator; the generation prompt is the assistant header.
    std::vector<TokenId> prefix_;            // at the very start (BOS where the template has it)
    bool system_role_ = false;               // else system texts are folded into user turns
    std::vector<TokenId> system_header_;
    std::vector<TokenId> system_end_;        // end_of_turn + separator in the families
    std::vector<TokenId> user_header_;
    std::vector<TokenId> assistant_header_;
    std::vector<TokenId> user_end_;          // Llama 2 closes a user turn with " [/INST]"
    std::vector<TokenId> end_of_turn_;
    std::vector<TokenId> separator_;
    std::vector<TokenId> fold_open_, fold_close_;  // around a system text folded into a user turn
    std::vector<TokenId> stop_tokens_;
};

} // namespace arbor
