#include "reply_reasoning.h"

#include <QStringList>

#include <algorithm>

namespace arbor::app {

namespace {

constexpr QStringView kThinkOpen = u"<think>";
constexpr QStringView kThinkClose = u"</think>";
// Harmony: a message is [<|start|>role]<|channel|>name[ header]<|message|>content<|end|>.
constexpr QStringView kStart = u"<|start|>";
constexpr QStringView kChannel = u"<|channel|>";
constexpr QStringView kMessage = u"<|message|>";
constexpr QStringView kEnd = u"<|end|>";
constexpr QStringView kFinal = u"final";

QStringView trimmedStart(QStringView s) {
    qsizetype i = 0;
    while (i < s.size() && s[i].isSpace()) ++i;
    return s.sliced(i);
}

// `s` without a proper prefix of `marker` it ends with (the marker may be arriving).
QStringView withoutPartialMarker(QStringView s, QStringView marker) {
    for (qsizetype n = std::min(s.size(), marker.size() - 1); n > 0; --n)
        if (s.endsWith(marker.first(n))) return s.first(s.size() - n);
    return s;
}

bool isProperPrefixOf(QStringView s, QStringView marker) { return s.size() < marker.size() && marker.startsWith(s); }

// "<think>reasoning</think>answer", `body` being what follows the opening tag.
ReplyParts splitThink(QStringView body, bool streaming) {
    ReplyParts parts;
    const qsizetype close = body.indexOf(kThinkClose);
    if (close < 0) {
        parts.reasoning = (streaming ? withoutPartialMarker(body, kThinkClose) : body).trimmed().toString();
        parts.reasoningOpen = streaming;
        return parts;
    }
    parts.reasoning = body.first(close).trimmed().toString();
    parts.answer = trimmedStart(body.sliced(close + kThinkClose.size())).toString();
    return parts;
}

// The channel a harmony header names ("analysis", "commentary", "final"); empty when it
// names none (yet).
QStringView channelOf(QStringView header) {
    const qsizetype at = header.indexOf(kChannel);
    if (at < 0) return {};
    QStringView name = header.sliced(at + kChannel.size());
    qsizetype end = 0;
    while (end < name.size() && !name[end].isSpace() && name[end] != u'<') ++end;
    return name.first(end);
}

// Harmony messages: the final channel's content is the answer, every other channel's
// (analysis, commentary and its tool calls) is reasoning.
ReplyParts splitHarmony(QStringView text, bool streaming) {
    ReplyParts parts;
    QStringList reasoning;
    qsizetype pos = 0;
    while (pos < text.size()) {
        const qsizetype message = text.indexOf(kMessage, pos);
        if (message < 0) {
            const QStringView header = text.sliced(pos);
            if (streaming) {
                // A header on its way: thinking, unless it may become the final channel's.
                const QStringView channel = channelOf(header);
                parts.reasoningOpen = !channel.isEmpty() && !kFinal.startsWith(channel);
            } else if (!header.trimmed().isEmpty()) {
                reasoning << header.trimmed().toString();  // not harmony after all: nothing is dropped
            }
            break;
        }
        const QStringView channel = channelOf(text.sliced(pos, message - pos));
        const bool isAnswer = channel.isEmpty() || channel == kFinal;
        const qsizetype start = message + kMessage.size();
        const qsizetype end = text.indexOf(kEnd, start);
        QStringView content = end < 0 ? text.sliced(start) : text.sliced(start, end - start);
        if (end < 0 && streaming) content = withoutPartialMarker(content, kEnd);
        if (isAnswer) {
            content = trimmedStart(content);
            if (!parts.answer.isEmpty() && !content.isEmpty()) parts.answer += u"\n\n";
            parts.answer += content;
        } else if (!content.trimmed().isEmpty()) {
            reasoning << content.trimmed().toString();
        }
        if (end < 0) {
            parts.reasoningOpen = streaming && !isAnswer;
            break;
        }
        pos = end + kEnd.size();
    }
    parts.reasoning = reasoning.join(u"\n\n");
    return parts;
}

} // namespace

ReplyParts splitReasoning(QStringView text, bool streaming) {
    const QStringView start = trimmedStart(text);
    if (start.startsWith(kThinkOpen)) return splitThink(start.sliced(kThinkOpen.size()), streaming);
    if (start.startsWith(kChannel) || start.startsWith(kStart)) return splitHarmony(start, streaming);
    // The reply's first characters may be an opening marker on its way (after whitespace).
    if (streaming
        && (start.isEmpty() || isProperPrefixOf(start, kThinkOpen) || isProperPrefixOf(start, kChannel)
            || isProperPrefixOf(start, kStart)))
        return {};

    ReplyParts parts;
    const qsizetype close = text.indexOf(kThinkClose);
    // A "</think>" the generation prompt opened; one after an opening tag in the middle of
    // the text is part of the answer (a reply about the tags, say).
    if (close >= 0 && !text.first(close).contains(kThinkOpen)) {
        parts.reasoning = text.first(close).trimmed().toString();
        parts.answer = trimmedStart(text.sliced(close + kThinkClose.size())).toString();
        return parts;
    }
    parts.answer = (streaming && close < 0 ? withoutPartialMarker(text, kThinkClose) : text).toString();
    return parts;
}

} // namespace arbor::app
