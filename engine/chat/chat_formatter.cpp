#include "arbor/chat_template.h"

#include "chat_template_pieces.h"

#include "arbor/jinja.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <variant>

namespace arbor {
namespace {

void append(std::vector<TokenId>& out, const std::vector<TokenId>& ids) {
    out.insert(out.end(), ids.begin(), ids.end());
}

} // namespace

ChatFormatter::ChatFormatter(const Tokenizer& tokenizer, ChatTemplateKind kind) : tokenizer_(tokenizer) {
    init_family(kind);
}

ChatFormatter::ChatFormatter(const Tokenizer& tokenizer, std::string_view jinja_source, std::time_t now)
    : tokenizer_(tokenizer), now_(now) {
    if (jinja_source.empty()) {
        fallback_warning_ = "the model file has no chat template, so Arbor uses the ChatML format";
        spdlog::info("chat template: {}", fallback_warning_);  // the front ends show it (load_warnings.h)
        init_family(ChatTemplateKind::ChatML);
        return;
    }
    const auto token_text = [&](TokenId id) { return id >= 0 ? tokenizer_.token_bytes(id) : std::string(); };
    auto derived = derive_chat_template_pieces(jinja_source, token_text(tokenizer_.bos()), token_text(tokenizer_.eos()),
                                               strftime_globals(now_));
    if (const std::string* reason = std::get_if<std::string>(&derived)) {
        template_note_ = *reason;
        const auto family = match_chat_template_family(jinja_source);
        const ChatTemplateKind kind = family.value_or(ChatTemplateKind::ChatML);
        init_family(kind);
        if (family && family_renders_as(jinja_source, token_text(tokenizer_.bos()), token_text(tokenizer_.eos()))) {
            // Gemma 3 folds the system text into the first user turn as the Gemma family does,
            // and the family keeps the exact continuation.
            spdlog::info("chat template: the model's template cannot be taken apart ({}), but the {} family renders "
                         "exactly as it does", *reason, chat_template_name(kind));
            return;
        }
        std::string whole_reason;
        if (init_whole(jinja_source, &whole_reason)) {
            spdlog::info("chat template: {}", template_note_);
            return;
        }
        spdlog::info("chat template: the model's template cannot be rendered whole either: {}", whole_reason);
        fallback_warning_ = "the model's chat template could not be used (" + *reason + ")" +
                            (family ? "" : " and matches no known format") + ", so Arbor uses the " +
                            std::string(chat_template_name(kind)) + " format";
        spdlog::info("chat template: {}", fallback_warning_);  // the front ends show it (load_warnings.h)
        return;
    }
    const ChatTemplatePieces& p = std::get<ChatTemplatePieces>(derived);
    uses_model_template_ = true;
    template_ = std::make_shared<const jinja::CompiledTemplate>(jinja_source);  // it parsed: derived from it
    bos_text_ = token_text(tokenizer_.bos());
    eos_text_ = token_text(tokenizer_.eos());
    kind_ = match_chat_template_family(jinja_source).value_or(ChatTemplateKind::ChatML);
    prefix_ = special(p.prefix);
    // Same rule as the families: a template that writes no BOS gets the tokenizer's when
    // the vocabulary asks for one.
    if (tokenizer_.adds_bos() && tokenizer_.bos() >= 0 && (prefix_.empty() || prefix_.front() != tokenizer_.bos()))
        prefix_.insert(prefix_.begin(), tokenizer_.bos());
    system_role_ = true;
    system_header_ = special(p.system_header);
    system_end_ = special(p.system_end);
    user_header_ = special(p.user_header);
    user_end_ = special(p.user_end);
    assistant_header_ = special(p.assistant_header);
    // The first token after a reply is its end-of-turn marker when it is a special token
    // (<|im_end|>, <|eot_id|>, </s>); what follows is the separator before the next turn.
    const std::vector<TokenId> after = special(p.after_reply);
    const bool marker = !after.empty() && tokenizer_.is_special(after.front());
    end_of_turn_.assign(after.begin(), marker ? after.begin() + 1 : after.end());
    separator_.assign(marker ? after.begin() + 1 : after.end(), after.end());
    if (p.history_assistant_header != p.assistant_header)
        spdlog::info("chat template: the model's template opens replies in the history with less than the generation "
                     "prompt; Arbor keeps the whole prompt a reply continued");
    if (!p.default_system.empty())
        spdlog::info("chat template: the model's template adds a default system prompt to chats without one; "
                     "Arbor sends none ({} bytes)", p.default_system.size());
    init_stop_tokens("of the model");
}

bool ChatFormatter::family_renders_as(std::string_view jinja_source, const std::string& bos_text,
                                      const std::string& eos_text) const {
    struct Turn {
        Role role;
        std::string_view text;
    };
    const std::vector<std::vector<Turn>> conversations{
        {{Role::User, "Hello there."}},
        {{Role::System, "Be brief."}, {Role::User, "Hello there."}, {Role::Assistant, "Hi."}, {Role::User, "And again?"}},
        {{Role::User, "Hello there."}, {Role::Assistant, "Hi."}, {Role::User, "And again?"}},
    };
    try {
        const jinja::CompiledTemplate tpl(jinja_source);
        for (const auto& turns : conversations) {
            std::vector<ChatMessage> messages;
            std::vector<TemplateMessage> shown;
            for (const Turn& t : turns) {
                messages.push_back({t.role, encode_content(t.text)});
                shown.push_back({template_role(t.role), t.text});
            }
            const std::string rendered =
                tpl.render(chat_template_context(shown, true, bos_text, eos_text, jinja::Value(), strftime_globals(now_)));
            if (tokenizer_.decode(compose(messages)) != rendered) return false;
        }
    } catch (const std::exception&) {
        return false;  // it raises (Gemma 2 on system messages) or does not parse
    }
    return true;
}

void ChatFormatter::init_family(ChatTemplateKind kind) {
    kind_ = kind;
    const TokenId bos = tokenizer_.bos();
    const TokenId eos = tokenizer_.eos();
    // Families whose template text starts with BOS get the tokenizer's BOS id; the others
    // get it only when the vocabulary itself asks for one.
    const bool template_has_bos =
        kind == ChatTemplateKind::Llama3 || kind == ChatTemplateKind::Llama2 || kind == ChatTemplateKind::Gemma;
    const std::vector<TokenId> bos_ids = bos >= 0 ? std::vector<TokenId>{bos} : std::vector<TokenId>{};
    if (template_has_bos && bos < 0)
        spdlog::warn("chat template {}: the tokenizer has no BOS token; prompts start without it",
                     chat_template_name(kind));
    const std::vector<TokenId> eos_ids = eos >= 0 ? std::vector<TokenId>{eos} : special("</s>");

    switch (kind) {
    case ChatTemplateKind::ChatML:
        if (tokenizer_.adds_bos()) prefix_ = bos_ids;
        system_header_ = special("<|im_start|>system\n");
        user_header_ = special("<|im_start|>user\n");
        assistant_header_ = special("<|im_start|>assistant\n");
        end_of_turn_ = special("<|im_end|>");
        separator_ = special("\n");
        break;
    case ChatTemplateKind::Llama3:
        prefix_ = bos_ids;
        system_header_ = special("<|start_header_id|>system<|end_header_id|>\n\n");
        user_header_ = special("<|start_header_id|>user<|end_header_id|>\n\n");
        assistant_header_ = special("<|start_header_id|>assistant<|end_header_id|>\n\n");
        end_of_turn_ = special("<|eot_id|>");
        break;
    case ChatTemplateKind::Llama2:
        // Every user turn opens with BOS; the generation prompt is empty because the
        // reply follows " [/INST]" directly.
        user_header_ = bos_ids;
        append(user_header_, special("[INST] "));
        user_end_ = special(" [/INST]");
        fold_open_ = special("<<SYS>>\n");
        fold_close_ = special("\n<</SYS>>\n\n");
        end_of_turn_ = eos_ids;
        break;
    case ChatTemplateKind::Gemma:
        prefix_ = bos_ids;
        user_header_ = special("<start_of_turn>user\n");
        assistant_header_ = special("<start_of_turn>model\n");
        fold_close_ = special("\n\n");
        end_of_turn_ = special("<end_of_turn>");
        separator_ = special("\n");
        break;
    case ChatTemplateKind::Zephyr:
        if (tokenizer_.adds_bos()) prefix_ = bos_ids;
        system_header_ = special("<|system|>\n");
        user_header_ = special("<|user|>\n");
        assistant_header_ = special("<|assistant|>\n");
        end_of_turn_ = eos_ids;
        separator_ = special("\n");
        break;
    }
    if (kind != ChatTemplateKind::Llama2) {
        user_end_ = end_of_turn_;
        append(user_end_, separator_);
    }
    system_role_ = !system_header_.empty();
    system_end_ = end_of_turn_;
    append(system_end_, separator_);
    init_stop_tokens(chat_template_name(kind));
}

void ChatFormatter::init_stop_tokens(std::string_view name) {
    const TokenId eos = tokenizer_.eos();
    if (end_of_turn_.size() == 1) stop_tokens_.push_back(end_of_turn_[0]);
    else
        spdlog::warn("chat template {}: the end-of-turn marker is not a single token in this vocabulary ({} ids)",
                     name, end_of_turn_.size());
    if (eos >= 0 && std::find(stop_tokens_.begin(), stop_tokens_.end(), eos) == stop_tokens_.end())
        stop_tokens_.push_back(eos);
}

std::vector<TokenId> ChatFormatter::special(std::string_view text) const {
    return tokenizer_.encode(text, false, true);
}

std::vector<TokenId> ChatFormatter::encode_content(std::string_view text) const {
    return tokenizer_.encode(text, false, false);
}

std::vector<TokenId> ChatFormatter::stop_tokens() const { return stop_tokens_; }

bool ChatFormatter::ends_turn(const std::vector<TokenId>& content) const {
    if (content.empty()) return false;
    if (std::find(stop_tokens_.begin(), stop_tokens_.end(), content.back()) != stop_tokens_.end()) return true;
    return !end_of_turn_.empty() && content.size() >= end_of_turn_.size() &&
           std::equal(end_of_turn_.rbegin(), end_of_turn_.rend(), content.rbegin());
}

void ChatFormatter::append_system(std::vector<TokenId>& out, const std::vector<TokenId>& content) const {
    append(out, system_header_);
    append(out, content);
    append(out, system_end_);
}

void ChatFormatter::append_user(std::vector<TokenId>& out, const std::vector<const std::vector<TokenId>*>& systems,
                                const std::vector<TokenId>* content) const {
    append(out, user_header_);
    for (const auto* s : systems) {
        append(out, fold_open_);
        append(out, *s);
        append(out, fold_close_);
    }
    if (content) append(out, *content);
    append(out, user_end_);
}

void ChatFormatter::append_assistant(std::vector<TokenId>& out, const std::vector<TokenId>& content) const {
    // Header identical to the generation prompt, and nothing between it and the content,
    // so a generated reply continues its own prompt token for token.
    append(out, assistant_header_);
    append_reply(out, content);
}

void ChatFormatter::append_reply(std::vector<TokenId>& out, const std::vector<TokenId>& content) const {
    append(out, content);
    if (!ends_turn(content)) append(out, end_of_turn_);
    append(out, separator_);
}

std::vector<TokenId> ChatFormatter::follow_up_prefix(const std::vector<TokenId>& prompt,
                                                     const std::vector<TokenId>& reply) const {
    if (whole_) return {};
    return pieces_follow_up(prompt, reply);
}

std::vector<TokenId> ChatFormatter::pieces_follow_up(std::vector<TokenId> prompt, const std::vector<TokenId>& reply) const {
    // compose() ends with the assistant header, which append_assistant would write again;
    // after an assistant turn no system text is pending, so the user turn opens plainly.
    append_reply(prompt, reply);
    append(prompt, user_header_);
    return prompt;
}

std::vector<TokenId> ChatFormatter::compose(const std::vector<ChatMessage>& messages, std::string* refusal) const {
    if (refusal) refusal->clear();
    return whole_ ? compose_whole(messages, refusal) : compose_pieces(messages);
}

std::vector<TokenId> ChatFormatter::compose_pieces(const std::vector<ChatMessage>& messages) const {
    const bool has_system_role = system_role_;
    std::vector<TokenId> out = prefix_;
    // System messages waiting to be folded into the next user turn (no system role).
    std::vector<const std::vector<TokenId>*> pending;
    for (const ChatMessage& m : messages) {
        switch (m.role) {
        case Role::System:
            if (has_system_role) append_system(out, m.content);
            else pending.push_back(&m.content);
            break;
        case Role::User:
            append_user(out, pending, &m.content);
            pending.clear();
            break;
        case Role::Assistant:
            if (!pending.empty()) append_user(out, pending, nullptr);
            pending.clear();
            append_assistant(out, m.content);
            break;
        }
    }
    if (!pending.empty()) append_user(out, pending, nullptr);
    append(out, assistant_header_);
    return out;
}

} // namespace arbor
