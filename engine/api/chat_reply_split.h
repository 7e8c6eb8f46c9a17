// A chat reply as /v1/chat/completions returns it: the reasoning a thinking model writes
// (arbor/reply_reasoning.h) as reasoning_content, apart from the answer in content; while
// it streams, each piece's newly settled part of each (never part of a marker).
#pragma once

#include "api/http_server.h"
#include "api/openai_responses.h"
#include "arbor/reply_reasoning.h"
#include "arbor/reply_split_stream.h"

#include <string>
#include <string_view>
#include <vector>

namespace arbor::api {

class ChatReplySplit {
public:
    explicit ChatReplySplit(bool prompt_opened_think);

    struct Delta {
        std::string reasoning;  // reasoning_content to send
        std::string answer;     // content to send
    };
    // The reply has grown by `piece`: what is newly settled of each part.
    Delta add(std::string_view piece);
    // The reply is complete: what was held back while it might have grown into a marker.
    Delta finish();
    // After finish(): the reply's parts, as split_reasoning splits the whole text.
    const ReplyParts& parts() const { return split_.parts(); }

private:
    Delta settle(const ReplySplitStream::Change& change);

    // The reply's text, after "<think>" where the prompt opened it (so the splitter sees
    // the reasoning from its start rather than take it for answer until "</think>"),
    // split as it grows.
    ReplySplitStream split_;
    // What was sent of each part. Invariant: a prefix of what the next split gives, except
    // where a "</think>" no "<think>" opened turns sent content into reasoning.
    // sent_answer_ is the last split's answer; sent_reasoning_ its reasoning too unless
    // that changed other than by growing (reasoning_current_ false: it was not sent).
    std::string sent_reasoning_, sent_answer_;
    bool reasoning_current_ = true;
};

// Sends a streamed reply's newly settled parts as server-sent events: the reasoning and the
// answer in chunks of their own (delta.reasoning_content, delta.content); false once the
// client is gone.
bool write_chat_delta(ResponseWriter& out, const ResponseMeta& meta, const ChatReplySplit::Delta& delta,
                      bool with_usage_null);

// The texts a client may send a reply back as, each to recall the reply's ids by (reply
// memory): the text as generated and, where it differs, the answer alone (what clients
// send as content; empty when the reply has no answer).
std::vector<std::string> reply_recall_texts(const std::string& text, const ReplyParts& parts);

} // namespace arbor::api
