// reasoning_content from the real server and engine: a copy of the default model whose chat
// template's generation prompt opens <think> (as DeepSeek-R1 distills' do), so whatever the
// model writes is reasoning until it closes the tag, which this small model does not do: a
// reply comes back as reasoning_content with an empty content, streamed as
// delta.reasoning_content only. The split of replies that also answer, in pieces of every
// size, is test_chat_reply_split's.
#include "api_test_fixture.h"

#include "../model/synthetic_model_files.h"

#include <memory>

using arbor::api::Json;

namespace {

// ChatML with the generation prompt's <think> left open.
const char* const kTemplate =
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}";

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

    Json body(bool stream) {
        Json m = Json::array();
        m.push_back(arbor::test::message("user", "Name a color."));
        Json b = arbor::test::chat_body(f_.model_id, std::move(m), 24);
        b.set("stream", stream);
        return b;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        const std::string copy = dir_.path().toStdString() + "/SmolLM2-thinking-template.gguf";
        auto parts = arbor::test::Parts::read(arbor::test::model_path());
        parts.set("tokenizer.chat_template", arbor::test::gv::str(kTemplate));
        parts.write(copy);
        model_env_ = std::make_unique<arbor::test::ScopedEnv>("ARBOR_MODEL", QByteArray::fromStdString(copy));
        f_.start(2048);
    }
    void cleanupTestCase() { f_.stop(); }

    void replyIsReasoning() {
        // The engine's own greedy run of the prompt the template gives.
        arbor::GenerateOptions greedy;
        greedy.sampler.temperature = 0.0f;
        greedy.max_tokens = 24;
        const arbor::ChatFormatter& chat = f_.server->chat_formatter();  // the model's own template
        const auto prompt = chat.compose({{arbor::Role::User, chat.encode_content("Name a color.")}});
        QVERIFY(f_.model->tokenizer().decode(prompt).ends_with("<think>\n"));
        const auto direct = f_.run_direct(prompt, greedy);
        QVERIFY(!trimmed(direct.text).empty());
        QVERIFY2(direct.text.find("</think>") == std::string::npos, direct.text.c_str());

        const auto r = f_.post("/v1/chat/completions", body(false));
        QCOMPARE(r.status, 200);
        const Json& msg = *r.body.find("choices")->as_array()[0].find("message");
        QVERIFY2(msg.find("reasoning_content") != nullptr, r.raw.c_str());
        QVERIFY2(msg.find("reasoning_content")->as_string() == trimmed(direct.text), (r.raw + " / direct: " + direct.text).c_str());
        QCOMPARE(msg.find("content")->as_string(), std::string());

        int status = 0;
        const auto events = f_.stream("/v1/chat/completions", body(true), &status);
        QCOMPARE(status, 200);
        QCOMPARE(events.back(), std::string("[DONE]"));
        std::string reasoning, content;
        for (size_t i = 0; i + 1 < events.size(); ++i) {
            const Json chunk = Json::parse(events[i]);
            const auto& choices = chunk.find("choices")->as_array();
            if (choices.empty()) continue;
            const Json& delta = *choices[0].find("delta");
            if (const Json* p = delta.find("reasoning_content")) reasoning += p->as_string();
            if (const Json* p = delta.find("content")) content += p->as_string();
        }
        QCOMPARE(reasoning, trimmed(direct.text));
        QCOMPARE(content, std::string());
    }
};

QTEST_GUILESS_MAIN(TestApiReasoning)
#include "test_api_reasoning.moc"
