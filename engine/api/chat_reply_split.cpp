#include "api/chat_reply_split.h"

namespace arbor::api {

ChatReplySplit::ChatReplySplit(bool prompt_opened_think) : split_(prompt_opened_think ? "<think>" : "") {}

ChatReplySplit::Delta ChatReplySplit::add(std::string_view piece) { return settle(split_.add(piece)); }

ChatReplySplit::Delta ChatReplySplit::finish() { return settle(split_.finish()); }

ChatReplySplit::Delta ChatReplySplit::settle(const ReplySplitStream::Change& change) {
    const ReplyParts& now = split_.parts();
    Delta delta;
    // Each piece costs what it adds: where the split only grew a part past what was sent,
    // the sent text is its prefix without comparing them.
    if (change.answer_from >= sent_answer_.size() || now.answer.starts_with(sent_answer_)) {
        delta.answer = now.answer.substr(sent_answer_.size());
        sent_answer_ += delta.answer;
    } else {
        // A "</think>" that neither the reply nor the prompt opened, after some of the
        // text before it was sent as content (a stream cannot take text back): the content
        // goes on with the rest of that text, then the answer after the marker, and that
        // reasoning is not sent. (Sent content is then a prefix of the text: without an
        // opening marker the streamed answer is the text less a held-back marker part.)
        const std::string& text = split_.text();
        const size_t close = text.find("</think>");
        delta.answer = text.substr(sent_answer_.size(), close - std::min(close, sent_answer_.size())) + now.answer;
        sent_answer_ = now.answer;
        sent_reasoning_ = now.reasoning;
        reasoning_current_ = true;
        return delta;
    }
    if ((reasoning_current_ && change.reasoning_from >= sent_reasoning_.size()) ||
        now.reasoning.starts_with(sent_reasoning_)) {
        delta.reasoning = now.reasoning.substr(sent_reasoning_.size());
        sent_reasoning_ += delta.reasoning;
        reasoning_current_ = true;
    } else {
        reasoning_current_ = false;
    }
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
