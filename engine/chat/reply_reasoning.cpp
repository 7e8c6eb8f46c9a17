#include "arbor/reply_reasoning.h"

#include <algorithm>
#include <vector>

namespace arbor {

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
// Harmony: a message is [<|start|>role]<|channel|>name[ header]<|message|>content<|end|>.
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kFinal = "final";

// ASCII whitespace only (see trimmed_space).
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trimmed_start(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return s.substr(i);
}

// `s` without a proper prefix of `marker` it ends with (the marker may be arriving).
std::string_view without_partial_marker(std::string_view s, std::string_view marker) {
    for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
        if (s.ends_with(marker.substr(0, n))) return s.substr(0, s.size() - n);
    return s;
}

bool is_proper_prefix_of(std::string_view s, std::string_view marker) {
    return s.size() < marker.size() && marker.starts_with(s);
}

// "<think>reasoning</think>answer", `body` being what follows the opening tag.
ReplyParts split_think(std::string_view body, bool streaming) {
    ReplyParts parts;
    const size_t close = body.find(kThinkClose);
    if (close == std::string_view::npos) {
        parts.reasoning = trimmed_space(streaming ? without_partial_marker(body, kThinkClose) : body);
        parts.reasoning_open = streaming;
        return parts;
    }
    parts.reasoning = trimmed_space(body.substr(0, close));
    parts.answer = trimmed_start(body.substr(close + kThinkClose.size()));
    return parts;
}

// The channel a harmony header names ("analysis", "commentary", "final"); empty when it
// names none (yet).
std::string_view channel_of(std::string_view header) {
    const size_t at = header.find(kChannel);
    if (at == std::string_view::npos) return {};
    const std::string_view name = header.substr(at + kChannel.size());
    size_t end = 0;
    while (end < name.size() && !is_space(name[end]) && name[end] != '<') ++end;
    return name.substr(0, end);
}

// Harmony messages: the final channel's content is the answer, every other channel's
// (analysis, commentary and its tool calls) is reasoning.
ReplyParts split_harmony(std::string_view text, bool streaming) {
    ReplyParts parts;
    std::vector<std::string_view> reasoning;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t message = text.find(kMessage, pos);
        if (message == std::string_view::npos) {
            const std::string_view header = text.substr(pos);
            if (streaming) {
                // A header on its way: thinking, unless it may become the final channel's.
                const std::string_view channel = channel_of(header);
                parts.reasoning_open = !channel.empty() && !kFinal.starts_with(channel);
            } else if (!trimmed_space(header).empty()) {
                reasoning.push_back(trimmed_space(header));  // not harmony after all: nothing is dropped
            }
            break;
        }
        const std::string_view channel = channel_of(text.substr(pos, message - pos));
        const bool is_answer = channel.empty() || channel == kFinal;
        const size_t start = message + kMessage.size();
        const size_t end = text.find(kEnd, start);
        const bool ended = end != std::string_view::npos;
        std::string_view content = ended ? text.substr(start, end - start) : text.substr(start);
        if (!ended && streaming) content = without_partial_marker(content, kEnd);
        if (is_answer) {
            content = trimmed_start(content);
            if (!parts.answer.empty() && !content.empty()) parts.answer += "\n\n";
            parts.answer += content;
        } else if (!trimmed_space(content).empty()) {
            reasoning.push_back(trimmed_space(content));
        }
        if (!ended) {
            parts.reasoning_open = streaming && !is_answer;
            break;
        }
        pos = end + kEnd.size();
    }
    for (size_t i = 0; i < reasoning.size(); ++i) {
        if (i) parts.reasoning += "\n\n";
        parts.reasoning += reasoning[i];
    }
    return parts;
}

} // namespace

std::string_view trimmed_space(std::string_view s) {
    s = trimmed_start(s);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

ReplyParts split_reasoning(std::string_view text, bool streaming) {
    const std::string_view start = trimmed_start(text);
    if (start.starts_with(kThinkOpen)) return split_think(start.substr(kThinkOpen.size()), streaming);
    if (start.starts_with(kChannel) || start.starts_with(kStart)) return split_harmony(start, streaming);
    // The reply's first characters may be an opening marker on its way (after whitespace).
    if (streaming && (start.empty() || is_proper_prefix_of(start, kThinkOpen) || is_proper_prefix_of(start, kChannel) ||
                      is_proper_prefix_of(start, kStart)))
        return {};

    ReplyParts parts;
    const size_t close = text.find(kThinkClose);
    // A "</think>" the generation prompt opened; one after an opening tag in the middle of
    // the text is part of the answer (a reply about the tags, say).
    if (close != std::string_view::npos && text.substr(0, close).find(kThinkOpen) == std::string_view::npos) {
        parts.reasoning = trimmed_space(text.substr(0, close));
        parts.answer = trimmed_start(text.substr(close + kThinkClose.size()));
        return parts;
    }
    parts.answer = streaming && close == std::string_view::npos ? without_partial_marker(text, kThinkClose) : text;
    return parts;
}

} // namespace arbor
