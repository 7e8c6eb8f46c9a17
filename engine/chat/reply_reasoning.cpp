#include "arbor/reply_reasoning.h"

#include "reply_markers.h"

#include <algorithm>
#include <vector>

namespace arbor {

namespace {

using namespace reply_markers;

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
    while (end < name.size() && !ends_channel_name(name[end])) ++end;
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

bool prompt_opens_think(std::string_view prompt_end) { return trimmed_space(prompt_end).ends_with(kThinkOpen); }

bool prompt_opens_think(const Tokenizer& tokenizer, std::span<const TokenId> prompt) {
    const std::span<const TokenId> tail = prompt.last(std::min<size_t>(prompt.size(), 8));
    return prompt_opens_think(tokenizer.decode({tail.begin(), tail.end()}));
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
