// ChatFormatter::compose_with_tools: a request's tool definitions rendered by the model's
// own template, with the messages' ids spliced in where their placeholders landed.
#include "arbor/chat_template.h"
#include "arbor/error.h"
#include "arbor/jinja.h"

#include "chat_template_pieces.h"

#include <string>

namespace arbor {
namespace {

// Unique for each message, none the start of another, and unchanged by trim or strip.
std::string placeholder(size_t i) { return "ArborSentinel" + std::to_string(i) + "Message"; }

} // namespace

std::vector<TokenId> ChatFormatter::compose_with_tools(const std::vector<ChatMessage>& messages,
                                                       const jinja::Value& tools) const {
    if (!template_)
        throw Error(fallback_warning_.empty()
                        ? std::string("tools need the model's own chat template")
                        : "tools need the model's own chat template, and " + fallback_warning_);
    std::vector<std::string> texts;
    std::vector<TemplateMessage> shown;
    texts.reserve(messages.size());
    for (size_t i = 0; i < messages.size(); ++i) texts.push_back(placeholder(i));
    for (size_t i = 0; i < messages.size(); ++i) shown.push_back({template_role(messages[i].role), texts[i]});
    std::string with, without;
    try {
        with = template_->render(chat_template_context(shown, true, bos_text_, eos_text_, tools));
        without = template_->render(chat_template_context(shown, true, bos_text_, eos_text_, jinja::Value()));
    } catch (const jinja::JinjaError& e) {
        throw Error(std::string("the model's chat template could not render these messages with tools: ") + e.what());
    }
    if (with == without) throw Error("the model's chat template does not show tools to the model");

    std::vector<TokenId> out;
    size_t at = 0;
    for (size_t i = 0; i < messages.size(); ++i) {
        const size_t found = with.find(texts[i], at);
        if (found == std::string::npos || with.find(texts[i], found + 1) != std::string::npos)
            throw Error("the model's chat template with tools does not show each message once, in order");
        const auto piece = special(std::string_view(with).substr(at, found - at));
        out.insert(out.end(), piece.begin(), piece.end());
        out.insert(out.end(), messages[i].content.begin(), messages[i].content.end());
        at = found + texts[i].size();
    }
    const auto tail = special(std::string_view(with).substr(at));
    out.insert(out.end(), tail.begin(), tail.end());
    // The same rule as compose(): the tokenizer's BOS when the vocabulary asks for one
    // and the template wrote none.
    if (tokenizer_.adds_bos() && tokenizer_.bos() >= 0 && (out.empty() || out.front() != tokenizer_.bos()))
        out.insert(out.begin(), tokenizer_.bos());
    return out;
}

} // namespace arbor
