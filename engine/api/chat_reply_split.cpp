#include "api/chat_reply_split.h"

namespace arbor::api {

bool prompt_opens_think(std::string_view prompt_end) {
    return trimmed_space(prompt_end).ends_with("<think>");
}

ChatReplySplit::ChatReplySplit(bool prompt_opened_think) {
    if (prompt_opened_think) text_ = "<think>";
}

ChatReplySplit::Delta ChatReplySplit::add(std::string_view piece) {
    text_ += piece;
    return settle(true);
}

ChatReplySplit::Delta ChatReplySplit::finish() { return settle(false); }

ReplyParts ChatReplySplit::parts() const { return split_reasoning(text_, false); }

ChatReplySplit::Delta ChatReplySplit::settle(bool streaming) {
    ReplyParts now = split_reasoning(text_, streaming);
    Delta delta;
    if (now.answer.starts_with(sent_answer_)) {
        delta.answer = now.answer.substr(sent_answer_.size());
    } else {
        // A "</think>" that neither the reply nor the prompt opened, after some of the
        // text before it was sent as content (a stream cannot take text back): the content
        // goes on with the rest of that text, then the answer after the marker, and that
        // reasoning is not sent. (Sent content is then a prefix of the text: without an
        // opening marker the streamed answer is the text less a held-back marker part.)
        const size_t close = text_.find("</think>");
        delta.answer = text_.substr(sent_answer_.size(), close - std::min(close, sent_answer_.size())) + now.answer;
        sent_reasoning_ = now.reasoning;
    }
    if (now.reasoning.starts_with(sent_reasoning_)) delta.reasoning = now.reasoning.substr(sent_reasoning_.size());
    if (!delta.reasoning.empty()) sent_reasoning_ = std::move(now.reasoning);
    sent_answer_ = std::move(now.answer);
    return delta;
}

bool write_chat_delta(ResponseWriter& out, const ResponseMeta& meta, const ChatReplySplit::Delta& delta,
                      bool with_usage_null) {
    if (!delta.reasoning.empty() &&
        !out.write(sse_event(chat_chunk_json(meta, "", "", Json(), with_usage_null, delta.reasoning))))
        return false;
    return delta.answer.empty() || out.write(sse_event(chat_chunk_json(meta, "", delta.answer, Json(), with_usage_null)));
}

std::vector<std::string> reply_recall_texts(const std::string& text, const ReplyParts& parts) {
    std::vector<std::string> texts{text};
    if (!parts.answer.empty() && parts.answer != text) texts.push_back(parts.answer);
    return texts;
}

} // namespace arbor::api
