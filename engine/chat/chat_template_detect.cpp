#include "arbor/chat_template.h"

#include <spdlog/spdlog.h>

#include <array>
#include <utility>

namespace arbor {

std::string_view chat_template_name(ChatTemplateKind kind) {
    switch (kind) {
    case ChatTemplateKind::ChatML: return "ChatML";
    case ChatTemplateKind::Llama3: return "Llama 3";
    case ChatTemplateKind::Llama2: return "Llama 2";
    case ChatTemplateKind::Gemma: return "Gemma";
    case ChatTemplateKind::Zephyr: return "Zephyr";
    }
    return "unknown";
}

std::optional<ChatTemplateKind> match_chat_template_family(std::string_view jinja_source) {
    // First match wins: a template may mention another family's marker in passing, but
    // each family's own turn marker is checked before the weaker ones.
    static constexpr std::array<std::pair<std::string_view, ChatTemplateKind>, 5> markers{{
        {"<|im_start|>", ChatTemplateKind::ChatML},
        {"<|start_header_id|>", ChatTemplateKind::Llama3},
        {"[INST]", ChatTemplateKind::Llama2},
        {"<start_of_turn>", ChatTemplateKind::Gemma},
        {"<|user|>", ChatTemplateKind::Zephyr},
    }};
    for (const auto& [marker, kind] : markers) {
        if (jinja_source.find(marker) != std::string_view::npos) return kind;
    }
    return std::nullopt;
}

ChatTemplateKind detect_chat_template(std::string_view jinja_source, bool* recognised) {
    const auto kind = match_chat_template_family(jinja_source);
    if (recognised) *recognised = kind.has_value();
    if (kind) return *kind;
    if (jinja_source.empty())
        spdlog::warn("chat template: the model has no tokenizer.chat_template; using ChatML");
    else
        spdlog::warn("chat template: unrecognised tokenizer.chat_template ({} bytes, starts \"{}\"); using ChatML",
                     jinja_source.size(), jinja_source.substr(0, 60));
    return ChatTemplateKind::ChatML;
}

} // namespace arbor
