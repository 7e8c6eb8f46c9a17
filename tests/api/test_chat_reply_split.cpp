// A chat reply's reasoning and answer as /v1/chat/completions sends them
// (api/chat_reply_split.h): scripted replies of each kind, in pieces of every size, through
// the SSE chunks and the HTTP writer the route uses; the stream, read back, must give the
// parts of the whole reply, reasoning before answer, with no marker or part of one in a
// piece. The default model does not reason, so the replies are scripted here; the route
// over the real engine is test_api_server's and test_api_reasoning's.
#include "api/chat_reply_split.h"
#include "api/reply_memory.h"

#include <QtTest>

#include <string>
#include <vector>

using arbor::ReplyParts;
using arbor::api::ChatReplySplit;
using arbor::api::Json;

namespace {

// Collects what the writer sends.
struct Collect : arbor::api::ResponseWriter::Sink {
    std::string bytes;
    bool write(std::string b) override {
        bytes += b;
        return true;
    }
    bool peer_gone() override { return false; }
};

// What a client reads from a stream: each chunk's delta pieces, in order.
struct Streamed {
    std::vector<std::string> reasoning, content;
    std::string all_reasoning, all_content;
    bool reasoning_after_content = false;
};

// The chunked body's payload, then its "data: " events.
Streamed read_back(const std::string& http) {
    const size_t body = http.find("\r\n\r\n") + 4;
    std::string payload;
    for (size_t at = body;;) {
        const size_t eol = http.find("\r\n", at);
        const size_t size = std::stoul(http.substr(at, eol - at), nullptr, 16);
        if (size == 0) break;
        payload += http.substr(eol + 2, size);
        at = eol + 2 + size + 2;
    }
    Streamed s;
    for (size_t at = 0; (at = payload.find("data: ", at)) != std::string::npos;) {
        const size_t end = payload.find("\n\n", at);
        const Json chunk = Json::parse(std::string_view(payload).substr(at + 6, end - at - 6));
        at = end + 2;
        const Json& delta = *chunk.find("choices")->as_array()[0].find("delta");
        if (const Json* r = delta.find("reasoning_content")) {
            s.reasoning.push_back(r->as_string());
            s.all_reasoning += r->as_string();
            if (!s.content.empty()) s.reasoning_after_content = true;
        }
        if (const Json* c = delta.find("content")) {
            s.content.push_back(c->as_string());
            s.all_content += c->as_string();
        }
    }
    return s;
}

// `text` streamed in pieces of `piece` bytes (whole UTF-8 characters: a piece never
// ends inside one, as the engine's never do), the way the route streams it.
Streamed stream(const std::string& text, size_t piece, bool prompt_opened_think) {
    Collect sink;
    arbor::api::ResponseWriter out(sink, false);
    out.begin_stream(200, {});
    const arbor::api::ResponseMeta meta{"chatcmpl-test", 0, "m"};
    ChatReplySplit split(prompt_opened_think);
    for (size_t at = 0; at < text.size();) {
        size_t n = std::min(piece, text.size() - at);
        while (at + n < text.size() && (text[at + n] & 0xC0) == 0x80) ++n;
        arbor::api::write_chat_delta(out, meta, split.add(std::string_view(text).substr(at, n)), true);
        at += n;
    }
    arbor::api::write_chat_delta(out, meta, split.finish(), true);
    out.end_stream();
    return read_back(sink.bytes);
}

const std::string kThink = "<think>\nThe user asks for 2 + 2. Café: 4.\n</think>\n\nIt is **4**.";
const std::string kHarmony =
    "<|channel|>analysis<|message|>The user asks for 2 + 2. Simple.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is **4**.";

} // namespace

class TestChatReplySplit : public QObject {
    Q_OBJECT

    // Every piece size streams the whole reply's parts, reasoning first, and no piece holds
    // a marker's '<' (the scripted replies have none in their parts).
    static void checkStreams(const std::string& text, bool prompt_opened_think, const std::string& reasoning,
                             const std::string& answer) {
        ChatReplySplit split(prompt_opened_think);
        split.add(text);
        split.finish();
        const ReplyParts whole = split.parts();
        QCOMPARE(whole.reasoning, reasoning);
        QCOMPARE(whole.answer, answer);
        for (size_t piece = 1; piece <= text.size(); ++piece) {
            const Streamed s = stream(text, piece, prompt_opened_think);
            const QByteArray at = "piece size " + QByteArray::number(qulonglong(piece));
            QVERIFY2(s.all_reasoning == reasoning, at + ": " + QByteArray::fromStdString(s.all_reasoning));
            QVERIFY2(s.all_content == answer, at + ": " + QByteArray::fromStdString(s.all_content));
            QVERIFY2(!s.reasoning_after_content, at);
            for (const auto* pieces : {&s.reasoning, &s.content})
                for (const auto& p : *pieces) {
                    QVERIFY2(!p.empty(), at);
                    QVERIFY2(p.find('<') == std::string::npos, at + ": " + QByteArray::fromStdString(p));
                }
        }
    }

private slots:
    void thinkReply() { checkStreams(kThink, false, "The user asks for 2 + 2. Café: 4.", "It is **4**."); }

    // The generation prompt opened <think>: the reply is reasoning from its first piece.
    void thinkOpenedByThePrompt() {
        checkStreams("Okay, 2 + 2 is 4.\n</think>\n\nIt is 4.", true, "Okay, 2 + 2 is 4.", "It is 4.");
        // Cut short (max_tokens) inside the reasoning: no answer at all.
        checkStreams("Okay, let me see", true, "Okay, let me see", "");
    }

    void harmonyReply() { checkStreams(kHarmony, false, "The user asks for 2 + 2. Simple.", "It is **4**."); }

    // A long reply, of thousands of pieces, streams its whole parts too.
    void longReplies() {
        std::string reasoning, answer;
        for (int i = 0; i < 400; ++i) {
            reasoning += "Step " + std::to_string(i) + ": café, a < b.\n\n";
            answer += "Line " + std::to_string(i) + " of **4**.\n";
        }
        const std::string trimmed = reasoning.substr(0, reasoning.size() - 2);
        const std::string harmony = "<|channel|>analysis<|message|>" + reasoning +
                                    "<|end|><|start|>assistant<|channel|>final<|message|>" + answer;
        for (const auto& [text, opened] : {std::pair{"<think>\n" + reasoning + "</think>\n\n" + answer, false},
                                           std::pair{reasoning + "</think>\n\n" + answer, true}, std::pair{harmony, false}})
            for (const size_t piece : {1, 5}) {
                const Streamed s = stream(text, piece, opened);
                QCOMPARE(s.all_reasoning, trimmed);
                QCOMPARE(s.all_content, answer);
            }
    }

    // Text without markers is all content, held back only while its end may be a marker.
    void replyWithoutMarkers() {
        const std::string text = "Compare a and b, then think about it.";
        checkStreams(text, false, "", text);
        const std::string lt = "Compare with `a < b` and </b>, then <think about it>.";
        for (size_t piece = 1; piece <= lt.size(); ++piece) {
            const Streamed s = stream(lt, piece, false);
            QVERIFY(s.reasoning.empty());
            QCOMPARE(s.all_content, lt);
        }
    }

    // A "</think>" that neither the reply nor the prompt opened: once text before it went
    // out as content, it stays content (a stream cannot take it back) and goes on with the
    // rest of it and the answer, the marker left out; when the marker comes in the first
    // piece, the parts are those of the whole reply.
    void closeWithoutOpening() {
        const std::string text = "Okay, 2 + 2 is 4.\n</think>\n\nIt is 4.";
        bool split_seen = false, kept_seen = false;
        for (size_t piece = 1; piece <= text.size(); ++piece) {
            const Streamed s = stream(text, piece, false);
            const QByteArray at = "piece size " + QByteArray::number(qulonglong(piece));
            if (!s.reasoning.empty()) {
                split_seen = true;
                QVERIFY2(s.all_reasoning == "Okay, 2 + 2 is 4." && s.all_content == "It is 4.", at);
            } else {
                kept_seen = true;
                QVERIFY2(s.all_content == "Okay, 2 + 2 is 4.\nIt is 4.", at + ": " + QByteArray::fromStdString(s.all_content));
            }
        }
        QVERIFY(split_seen && kept_seen);
    }

    void promptOpensThink() {
        QVERIFY(arbor::prompt_opens_think("<|im_start|>assistant\n<think>\n"));
        QVERIFY(arbor::prompt_opens_think("<｜Assistant｜><think>"));
        QVERIFY(arbor::prompt_opens_think("<think>\r\n\t "));  // whitespace as the split trims it
        QVERIFY(!arbor::prompt_opens_think("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
        QVERIFY(!arbor::prompt_opens_think("<|im_start|>assistant\n"));
        QVERIFY(!arbor::prompt_opens_think(""));
    }

    // The response that is not streamed: content is the answer; reasoning_content only
    // where there is reasoning.
    void completionObject() {
        const arbor::api::ResponseMeta meta{"chatcmpl-test", 0, "m"};
        const Json with = arbor::api::chat_completion_json(meta, arbor::split_reasoning(kThink, false),
                                                           arbor::FinishReason::Stop, {});
        const Json& m = *with.find("choices")->as_array()[0].find("message");
        QCOMPARE(m.find("content")->as_string(), std::string("It is **4**."));
        QCOMPARE(m.find("reasoning_content")->as_string(), std::string("The user asks for 2 + 2. Café: 4."));
        const Json without = arbor::api::chat_completion_json(meta, arbor::split_reasoning("Blue.", false),
                                                              arbor::FinishReason::Stop, {});
        const Json& n = *without.find("choices")->as_array()[0].find("message");
        QCOMPARE(n.find("content")->as_string(), std::string("Blue."));
        QVERIFY(n.find("reasoning_content") == nullptr);
    }

    // A reply is recalled by its whole text and by its answer alone, to the same ids.
    void recallByAnswer() {
        arbor::api::ReplyMemory memory;
        const std::vector<arbor::TokenId> ids{5, 6, 7, 8};
        const auto texts = arbor::api::reply_recall_texts(kThink, arbor::split_reasoning(kThink, false));
        QCOMPARE(texts.size(), size_t(2));
        for (const auto& t : texts) memory.remember(t, ids, 1);
        QCOMPARE(memory.recall(kThink, 1), std::optional(ids));
        QCOMPARE(memory.recall("It is **4**.", 1), std::optional(ids));
        QVERIFY(!memory.recall("It is **4**.", 2));
        // Without markers the text is the answer: one entry. Without an answer: only the text.
        QCOMPARE(arbor::api::reply_recall_texts("Blue.", arbor::split_reasoning("Blue.", false)).size(), size_t(1));
        QCOMPARE(arbor::api::reply_recall_texts("<think>hm", arbor::split_reasoning("<think>hm", false)).size(), size_t(1));
    }
};

QTEST_APPLESS_MAIN(TestChatReplySplit)
#include "test_chat_reply_split.moc"
