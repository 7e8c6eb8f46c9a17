// reasoning_content from the real server and engine: a copy of the default model whose chat
// template's generation prompt opens <think> (as DeepSeek-R1 distills' do), so the model's
// reply is reasoning until it writes "</think>". Asked plainly it never does (its reply is
// all reasoning); after two example turns that do, it follows them ("A color: blue.\n
// </think>\n\nBlue."), which gives a reply with both parts to split, stream, and send
// back as its answer alone. The split in pieces of every size is test_chat_reply_split's.
#include "api_test_fixture.h"

#include "../model/synthetic_model_files.h"

#include "arbor/reply_reasoning.h"

#include <memory>

using arbor::api::Json;

namespace {

std::string trimmed(std::string s) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!s.empty() && space(s.back())) s.pop_back();
    size_t i = 0;
    while (i < s.size() && space(s[i])) ++i;
    return s.substr(i);
}

} // namespace

class TestApiReasoning : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<arbor::test::ScopedEnv> model_env_;
    arbor::test::ApiFixture f_;

    // "Name a color.", greedy, up to 24 tokens.
    Json body() const {
        Json m = Json::array();
        m.push_back(arbor::test::message("user", "Name a color."));
        return arbor::test::chat_body(f_.model_id, std::move(m), 24);
    }

    // Two example turns whose replies close the reasoning and answer, then `question`.
    static std::vector<std::pair<arbor::Role, std::string>> few_shot(const std::string& question) {
        return {{arbor::Role::User, "Name a fruit."},
                {arbor::Role::Assistant, "A fruit: apple.\n</think>\n\nApple."},
                {arbor::Role::User, "Name an animal."},
                {arbor::Role::Assistant, "An animal: cat.\n</think>\n\nCat."},
                {arbor::Role::User, question}};
    }
    static Json as_json(const std::vector<std::pair<arbor::Role, std::string>>& turns) {
        Json m = Json::array();
        for (const auto& [role, text] : turns)
            m.push_back(arbor::test::message(role == arbor::Role::User ? "user" : "assistant", text));
        return m;
    }
    std::vector<arbor::ChatMessage> encoded(const std::vector<std::pair<arbor::Role, std::string>>& turns) const {
        const arbor::ChatFormatter& chat = f_.server->chat_formatter();
        std::vector<arbor::ChatMessage> list;
        for (const auto& [role, text] : turns) list.push_back({role, chat.encode_content(text)});
        return list;
    }
    static arbor::GenerateOptions greedy(int max_tokens) {
        arbor::GenerateOptions o;
        o.sampler.temperature = 0.0f;
        o.max_tokens = max_tokens;
        return o;
    }
    // A streamed request's reasoning and content as a client joins them; "<bad stream>" as
    // the reasoning when the stream did not end with [DONE], had reasoning after content,
    // or showed a marker.
    std::pair<std::string, std::string> streamed(Json body) {
        body.set("stream", true);
        int status = 0;
        const auto events = f_.stream("/v1/chat/completions", body, &status);
        const std::pair<std::string, std::string> bad{"<bad stream>", ""};
        if (status != 200 || events.empty() || events.back() != "[DONE]") return bad;
        std::string reasoning, content;
        for (size_t i = 0; i + 1 < events.size(); ++i) {
            const Json chunk = Json::parse(events[i]);
            const auto& choices = chunk.find("choices")->as_array();
            if (choices.empty()) continue;
            const Json& delta = *choices[0].find("delta");
            if (const Json* p = delta.find("reasoning_content")) {
                if (!content.empty()) return bad;  // all reasoning comes first
                reasoning += p->as_string();
            }
            if (const Json* p = delta.find("content")) content += p->as_string();
            if (events[i].find("think>") != std::string::npos) return bad;
        }
        return {reasoning, content};
    }
    static int64_t usage(const Json& body, const char* key) {
        const Json& u = *body.find("usage");
        if (std::string(key) == "cached_tokens") return *u.find("prompt_tokens_details")->find("cached_tokens")->as_integer();
        return *u.find(key)->as_integer();
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        const std::string copy = dir_.path().toStdString() + "/SmolLM2-thinking-template.gguf";
        arbor::test::write_default_model_with_template(copy, arbor::test::kThinkingChatTemplate);
        model_env_ = std::make_unique<arbor::test::ScopedEnv>("ARBOR_MODEL", QByteArray::fromStdString(copy));
        f_.start(2048);
    }
    void cleanupTestCase() { f_.stop(); }

    // Asked plainly, the model never closes the reasoning: all of the reply is reasoning.
    void replyIsReasoning() {
        const arbor::ChatFormatter& chat = f_.server->chat_formatter();  // the model's own template
        const auto prompt = chat.compose({{arbor::Role::User, chat.encode_content("Name a color.")}});
        QVERIFY(f_.model->tokenizer().decode(prompt).ends_with("<think>\n"));
        const auto direct = f_.run_direct(prompt, greedy(24));  // the engine's own greedy run
        QVERIFY(!trimmed(direct.text).empty());
        QVERIFY2(direct.text.find("</think>") == std::string::npos, direct.text.c_str());

        const auto r = f_.post("/v1/chat/completions", body());
        QCOMPARE(r.status, 200);
        const Json& msg = *r.body.find("choices")->as_array()[0].find("message");
        QVERIFY2(msg.find("reasoning_content") && msg.find("reasoning_content")->as_string() == trimmed(direct.text),
                 (r.raw + " / direct: " + direct.text).c_str());
        QCOMPARE(msg.find("content")->as_string(), std::string());
        QCOMPARE(streamed(body()), std::make_pair(trimmed(direct.text), std::string()));
    }

    // A reply that reasons and answers: split as the engine's text splits, streamed
    // reasoning first, and sent back as its answer alone (with or without
    // reasoning_content) composed from the reply's own ids, so the follow-up extends the
    // previous prompt and reply token for token and comes from the prefix cache.
    void reasoningThenAnswer() {
        const arbor::ChatFormatter& chat = f_.server->chat_formatter();
        const auto turns = few_shot("Name a color.");
        const auto direct = f_.run_direct(chat.compose(encoded(turns)), greedy(40));
        const arbor::ReplyParts want = arbor::split_reasoning("<think>" + direct.text, false);
        QVERIFY2(!want.reasoning.empty() && !want.answer.empty(), direct.text.c_str());

        const Json body = arbor::test::chat_body(f_.model_id, as_json(turns), 40);
        const auto r = f_.post("/v1/chat/completions", body);
        QCOMPARE(r.status, 200);
        const Json& msg = *r.body.find("choices")->as_array()[0].find("message");
        QVERIFY2(msg.find("reasoning_content") && msg.find("reasoning_content")->as_string() == want.reasoning, r.raw.c_str());
        QVERIFY2(msg.find("content")->as_string() == want.answer, r.raw.c_str());
        QCOMPARE(streamed(body), std::make_pair(want.reasoning, want.answer));

        // The follow-up's prompt, the reply composed from its ids or from its answer's text.
        auto next = turns;
        next.push_back({arbor::Role::Assistant, want.answer});
        next.push_back({arbor::Role::User, "Name another."});
        auto from_ids = encoded(next);
        from_ids[5].content = direct.tokens;
        const int64_t exact = int64_t(chat.compose(from_ids).size()), retokenized = int64_t(chat.compose(encoded(next)).size());
        QVERIFY(exact > retokenized);  // the reasoning's ids are in the exact one
        const int64_t previous = usage(r.body, "prompt_tokens") + usage(r.body, "completion_tokens");
        for (bool with_reasoning : {false, true}) {
            Json m = as_json(next);
            if (with_reasoning) {
                Json a = arbor::test::message("assistant", want.answer);
                a.set("reasoning_content", want.reasoning);
                Json list = Json::array();
                for (size_t i = 0; i < next.size(); ++i) list.push_back(i == 5 ? a : m.as_array()[i]);
                m = std::move(list);
            }
            const auto follow = f_.post("/v1/chat/completions", arbor::test::chat_body(f_.model_id, std::move(m), 8));
            QCOMPARE(follow.status, 200);
            QCOMPARE(usage(follow.body, "prompt_tokens"), exact);
            // From the cache up to the page the reply ended in (pages of 16 tokens).
            QVERIFY2(usage(follow.body, "cached_tokens") >= previous - 16, follow.raw.c_str());
        }
    }
};

QTEST_GUILESS_MAIN(TestApiReasoning)
#include "test_api_reasoning.moc"
