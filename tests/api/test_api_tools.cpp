// Tools in chat completions, through a model whose chat template shows them: a copy of the
// default model carrying Qwen3's template (tests/data/chat_templates). The prompt the
// server runs holds exactly the tokens of Python jinja2's render of the same conversation
// with the same tools (expected.json); tool_choice "none" and an empty list leave them out.
#include "api_test_fixture.h"

#include "../chat/chat_template_fixtures.h"
#include "../model/synthetic_model_files.h"

#include <QJsonDocument>

#include <memory>

using arbor::api::Json;

class TestApiTools : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<arbor::test::ScopedEnv> model_env_;
    arbor::test::ApiFixture f_;
    QJsonObject conversation_;  // conversations.json's with_tools

    // The prompt tokens the server counted for the with_tools conversation, with `extra`
    // fields; -1 when it did not answer 200.
    int64_t prompt_tokens(const QJsonObject& extra) {
        QJsonObject body{{"model", QString::fromStdString(f_.model_id)},
                         {"messages", conversation_["messages"]},
                         {"max_tokens", 1},
                         {"temperature", 0}};
        for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
        const std::string text = QJsonDocument(body).toJson(QJsonDocument::Compact).toStdString();
        const auto r = f_.post_raw("/v1/chat/completions", text);
        if (r.status != 200) {
            qWarning("status %d: %s", r.status, r.raw.c_str());
            return -1;
        }
        const Json* usage = r.body.find("usage");
        return usage && usage->find("prompt_tokens") ? usage->find("prompt_tokens")->as_integer().value_or(-1) : -1;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        QVERIFY(dir_.isValid());
        const std::string copy = dir_.path().toStdString() + "/SmolLM2-with-Qwen3-template.gguf";
        auto parts = arbor::test::Parts::read(arbor::test::model_path());
        parts.set("tokenizer.chat_template",
                  arbor::test::gv::str(arbor::test::chat_template_fixture("Qwen-Qwen3-0.6B.jinja").toStdString()));
        parts.write(copy);
        model_env_ = std::make_unique<arbor::test::ScopedEnv>("ARBOR_MODEL", QByteArray::fromStdString(copy));
        f_.start(2048);
        conversation_ = QJsonDocument::fromJson(arbor::test::chat_template_fixture("conversations.json"))
                            .object()["conversations"].toObject()["with_tools"].toObject();
        QVERIFY(!conversation_["tools"].toArray().isEmpty());
    }
    void cleanupTestCase() { f_.stop(); }

    void toolsAreShownToTheModel() {
        const std::string want = QJsonDocument::fromJson(arbor::test::chat_template_fixture("expected.json"))
                                     .object()["Qwen-Qwen3-0.6B.jinja"].toObject()["with_tools"].toObject()["output"]
                                     .toString().toStdString();
        QVERIFY(want.find("get_weather") != std::string::npos);
        const auto ids = f_.model->tokenizer().encode(want, false, true);
        QCOMPARE(prompt_tokens({{"tools", conversation_["tools"]}}), int64_t(ids.size()));
        QCOMPARE(prompt_tokens({{"tools", conversation_["tools"]}, {"tool_choice", "auto"}}), int64_t(ids.size()));
    }

    // Without tools (none given, an empty list, or tool_choice "none") the prompt is the
    // template's plain one: for Qwen3's, ChatML.
    void noToolsLeavesThemOut() {
        const auto plain = int64_t(f_.chat_prompt({{arbor::Role::System, "Use the tools when they help."},
                                                   {arbor::Role::User, "What is the weather in Zürich?"}})
                                       .size());
        QCOMPARE(prompt_tokens({}), plain);
        QCOMPARE(prompt_tokens({{"tools", QJsonArray()}}), plain);
        QCOMPARE(prompt_tokens({{"tools", conversation_["tools"]}, {"tool_choice", "none"}}), plain);
    }
};

QTEST_GUILESS_MAIN(TestApiTools)
#include "test_api_tools.moc"
