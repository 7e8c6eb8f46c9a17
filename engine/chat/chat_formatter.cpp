#include "arbor/chat_template.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

namespace arbor {
namespace {

void append(std::vector<TokenId>& out, const std::vector<TokenId>& ids) {
    out.insert(out.end(), ids.begin(), ids.end());
}

} // namespace

ChatFormatter::ChatFormatter(const Tokenizer& tokenizer, ChatTemplateKind kind)
    : tokenizer_(tokenizer), kind_(kind) {
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

    if (end_of_turn_.size() == 1) stop_tokens_.push_back(end_of_turn_[0]);
    else
        spdlog::warn("chat template {}: the end-of-turn marker is not a single token in this vocabulary ({} ids)",
                     chat_template_name(kind), end_of_turn_.size());
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
    append(out, end_of_turn_);
    append(out, separator_);
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
    // compose() ends with the assistant header, which append_assistant would write again;
    // after an assistant turn no system text is pending, so the user turn opens plainly.
    std::vector<TokenId> out = prompt;
    append_reply(out, reply);
    append(out, user_header_);
    return out;
}

std::vector<TokenId> ChatFormatter::compose(const std::vector<ChatMessage>& messages) const {
    const bool has_system_role = !system_header_.empty();
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
