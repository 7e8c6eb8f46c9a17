#include "arbor/reply_split_stream.h"

#include "reply_markers.h"

namespace arbor {

using namespace reply_markers;

namespace {

constexpr size_t npos = std::string::npos;

// Grows `out`, whose bytes from `base` on are `sep` then text[first, ...), to end where
// text[end] begins. (Streaming, a part only grows: `end` never falls back.)
void extend(std::string& out, size_t base, std::string_view sep, std::string_view text, size_t first, size_t end) {
    if (out.size() == base) out += sep;
    const size_t have = first + (out.size() - base - sep.size());
    if (end > have) out.append(text.substr(have, end - have));
}

// Where text[from, ...) ends once a trailing part of `marker` is held back.
size_t before_partial(std::string_view text, size_t from, std::string_view marker) {
    return from + without_partial_marker(text.substr(from), marker).size();
}

} // namespace

bool ReplySplitStream::Search::find(std::string_view text, std::string_view marker) {
    if (at != npos) return true;
    at = text.find(marker, from);
    // No marker starts before size - marker.size() + 1; one may start after, in part.
    if (at == npos && text.size() >= marker.size()) from = std::max(from, text.size() - marker.size() + 1);
    return at != npos;
}

void ReplySplitStream::Extent::scan(std::string_view text, size_t to) {
    for (; scanned < to; ++scanned) {
        if (is_space(text[scanned])) continue;
        if (first == npos) first = scanned;
        last_end = scanned + 1;
    }
}

ReplySplitStream::ReplySplitStream(std::string_view opened) { add(opened); }

ReplySplitStream::Change ReplySplitStream::add(std::string_view piece) {
    change_ = {parts_.reasoning.size(), parts_.answer.size()};
    text_ += piece;
    // A mode may hand over to the next one below within the same piece.
    if (mode_ == Mode::undecided) decide();
    if (mode_ == Mode::thinking) think();
    if (mode_ == Mode::plain) plain();
    if (mode_ == Mode::answering) answer_rest();
    if (mode_ == Mode::plain_all) parts_.answer.append(text_, parts_.answer.size());
    if (mode_ == Mode::harmony) harmony();
    return change_;
}

ReplySplitStream::Change ReplySplitStream::finish() {
    parts_ = split_reasoning(text_, false);
    return {};
}

// As split_reasoning tells the kind of reply by its first characters after whitespace;
// while they may still become an opening marker, both parts stay empty.
void ReplySplitStream::decide() {
    while (lead_ < text_.size() && is_space(text_[lead_])) ++lead_;
    const std::string_view start = std::string_view(text_).substr(lead_);
    if (start.starts_with(kThinkOpen)) {
        mode_ = Mode::thinking;
        content_ = lead_ + kThinkOpen.size();
        extent_ = {.scanned = content_};
        close_ = {.from = content_};
    } else if (start.starts_with(kChannel) || start.starts_with(kStart)) {
        mode_ = Mode::harmony;
        header_ = lead_;
        message_ = channel_ = {.from = header_};
        name_scan_ = npos;
    } else if (!start.empty() && !is_proper_prefix_of(start, kThinkOpen) && !is_proper_prefix_of(start, kChannel) &&
               !is_proper_prefix_of(start, kStart)) {
        mode_ = Mode::plain;
        open_ = close_ = {.from = 0};
    }
}

// The reasoning is the body up to "</think>" (or up to a part of it held back), trimmed.
void ReplySplitStream::think() {
    const bool closed = close_.find(text_, kThinkClose);
    extent_.scan(text_, closed ? close_.at : before_partial(text_, content_, kThinkClose));
    if (extent_.first != npos) extend(parts_.reasoning, 0, {}, text_, extent_.first, extent_.last_end);
    parts_.reasoning_open = !closed;
    if (closed) {
        mode_ = Mode::answering;
        extent_ = {.scanned = close_.at + kThinkClose.size()};
    }
}

// The answer is the rest of the text from its first non-whitespace byte.
void ReplySplitStream::answer_rest() {
    extent_.scan(text_, text_.size());
    if (extent_.first != npos) extend(parts_.answer, 0, {}, text_, extent_.first, text_.size());
}

// All answer until the first "</think>"; that turns what came before it into reasoning,
// unless a "<think>" came before it too (a reply about the tags): then all stays answer.
void ReplySplitStream::plain() {
    open_.find(text_, kThinkOpen);
    if (!close_.find(text_, kThinkClose)) {
        extend(parts_.answer, 0, {}, text_, 0, before_partial(text_, 0, kThinkClose));
        return;
    }
    if (open_.at < close_.at) {
        mode_ = Mode::plain_all;
        return;
    }
    parts_.reasoning = trimmed_space(std::string_view(text_).substr(0, close_.at));
    parts_.answer.clear();
    change_ = {};
    mode_ = Mode::answering;
    extent_ = {.scanned = close_.at + kThinkClose.size()};
}

// Harmony messages one after the other: a message's content extends the answer (final
// channel, or none named) or the reasoning (any other), set apart by a blank line.
void ReplySplitStream::harmony() {
    for (;;) {
        if (!in_content_) {
            if (header_ >= text_.size()) {
                parts_.reasoning_open = false;
                return;
            }
            if (!message_.find(text_, kMessage)) {
                // A header on its way: thinking, unless it may become the final channel's.
                const std::string_view name = channel(text_.size());
                parts_.reasoning_open = !name.empty() && !kFinal.starts_with(name);
                return;
            }
            const std::string_view name = channel(message_.at);
            is_answer_ = name.empty() || name == kFinal;
            in_content_ = true;
            content_ = message_.at + kMessage.size();
            extent_ = {.scanned = content_};
            end_ = {.from = content_};
            part_base_ = is_answer_ ? parts_.answer.size() : parts_.reasoning.size();
        }
        const bool ended = end_.find(text_, kEnd);
        const size_t to = ended ? end_.at : before_partial(text_, content_, kEnd);
        extent_.scan(text_, to);
        if (extent_.first != npos) {
            const std::string_view sep = part_base_ > 0 ? "\n\n" : "";
            if (is_answer_)
                extend(parts_.answer, part_base_, sep, text_, extent_.first, to);  // not trimmed at its end
            else
                extend(parts_.reasoning, part_base_, sep, text_, extent_.first, extent_.last_end);
        }
        if (!ended) {
            parts_.reasoning_open = !is_answer_;
            return;
        }
        header_ = end_.at + kEnd.size();
        in_content_ = false;
        message_ = channel_ = {.from = header_};
        name_scan_ = npos;
    }
}

// The channel the header from header_ to header_end names (its first "<|channel|>"'s name,
// up to whitespace or a marker); empty when it names none (yet).
std::string_view ReplySplitStream::channel(size_t header_end) {
    if (!channel_.find(text_, kChannel) || channel_.at >= header_end) return {};
    const size_t name = channel_.at + kChannel.size();
    if (name_scan_ == npos) name_scan_ = name;
    // A header's end is a marker's '<', so the name never runs past it.
    while (name_scan_ < text_.size() && !ends_channel_name(text_[name_scan_])) ++name_scan_;
    return std::string_view(text_).substr(name, name_scan_ - name);
}

} // namespace arbor
