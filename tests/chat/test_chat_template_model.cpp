// Chat templates against the default model's real tokenizer and template metadata.
#include "chat_template_fixtures.h"
#include "test_support.h"

#include "arbor/chat_template.h"
#include "arbor/error.h"
#include "arbor/gguf.h"
#include "arbor/load_warnings.h"
#include "arbor/reply_reasoning.h"
#include "arbor/tokenizer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <memory>

using namespace arbor;

Q_DECLARE_METATYPE(ChatTemplateKind)

namespace {

struct Turn {
    Role role;
    std::string text;
};

// The conversation rendered by hand the way SmolLM2's ChatML template renders it.
std::string chatml_text(const std::vector<Turn>& turns) {
    std::string s;
    for (const Turn& t : turns) {
        const char* role = t.role == Role::System ? "system" : t.role == Role::User ? "user" : "assistant";
        s += std::string("<|im_start|>") + role + "\n" + t.text + "<|im_end|>\n";
    }
    return s + "<|im_start|>assistant\n";
}

} // namespace

class TestChatTemplateModel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        file_ = GgufFile::open(test::model_path());
        tokenizer_ = Tokenizer::from_gguf(*file_);
    }

    void detectsTheModelsTemplate() {
        const auto source = file_->get_string("tokenizer.chat_template");
        QVERIFY(source.has_value());
        bool recognised = false;
        QCOMPARE(detect_chat_template(*source, &recognised), ChatTemplateKind::ChatML);
        QVERIFY(recognised);
    }

    void stopTokensAreImEnd() {
        const ChatFormatter f(*tokenizer_, ChatTemplateKind::ChatML);
        const auto im_end = tokenizer_->find("<|im_end|>");
        QVERIFY(im_end.has_value());
        QCOMPARE(f.stop_tokens().front(), *im_end);
    }

    void composeEqualsTokenizedText_data() {
        QTest::addColumn<bool>("with_system");
        QTest::addColumn<QString>("reply");
        QTest::newRow("system") << true << QString("The capital of France is Paris.");
        QTest::newRow("no system") << false << QString("Paris, of course!");
        QTest::newRow("multiline") << true << QString("Here:\n```cpp\nint main() { return 0; }\n```\nDone.");
        QTest::newRow("unicode") << false << QString::fromUtf8("Ünïcödé — naïve café 😀 日本語");
    }

    void composeEqualsTokenizedText() {
        QFETCH(bool, with_system);
        QFETCH(QString, reply);
        std::vector<Turn> turns;
        if (with_system) turns.push_back({Role::System, "You are a helpful assistant."});
        turns.push_back({Role::User, "What is the capital of France?"});
        turns.push_back({Role::Assistant, reply.toStdString()});
        turns.push_back({Role::User, "And of Germany? Answer in one word."});

        const ChatFormatter f(*tokenizer_, ChatTemplateKind::ChatML);
        std::vector<ChatMessage> msgs;
        for (const Turn& t : turns) msgs.push_back({t.role, f.encode_content(t.text)});
        const std::string text = chatml_text(turns);
        const auto expected = tokenizer_->encode(text, false, true);
        const auto got = f.compose(msgs);
        QCOMPARE(got, expected);
        QCOMPARE(tokenizer_->decode(got), text);
    }

    // The invariant with real BPE ids, for every family (markers other families use are
    // plain text in this vocabulary, which the composition must not care about).
    void prefixInvariantWithRealTokenizer() {
        for (ChatTemplateKind kind : {ChatTemplateKind::ChatML, ChatTemplateKind::Llama3, ChatTemplateKind::Llama2,
                                      ChatTemplateKind::Gemma, ChatTemplateKind::Zephyr}) {
            const ChatFormatter f(*tokenizer_, kind);
            std::vector<ChatMessage> msgs{{Role::System, f.encode_content("Be brief.")},
                                          {Role::User, f.encode_content("Name a colour.")}};
            const char* replies[] = {" Blue", "Red\n\n", "Green. ", "it's yellow"};
            for (int turn = 0; turn < 4; ++turn) {
                const auto prompt = f.compose(msgs);
                auto reply = f.encode_content(replies[turn]);
                if (turn % 2 == 1) reply.push_back(f.stop_tokens().front());
                auto expected = prompt;
                expected.insert(expected.end(), reply.begin(), reply.end());
                msgs.push_back({Role::Assistant, reply});
                msgs.push_back({Role::User, f.encode_content("Another?")});
                const auto next = f.compose(msgs);
                QVERIFY2(next.size() > expected.size() && std::equal(expected.begin(), expected.end(), next.begin()),
                         qPrintable(QString("%1, turn %2")
                                        .arg(QString::fromUtf8(chat_template_name(kind).data(),
                                                               qsizetype(chat_template_name(kind).size())))
                                        .arg(turn)));
            }
        }
    }

    // The model's own template is rendered and taken apart; for SmolLM2 the prompts are
    // exactly the ChatML family's, ids and all.
    void modelTemplateComposesAsChatML() {
        const auto source = file_->get_string("tokenizer.chat_template");
        QVERIFY(source.has_value());
        const ChatFormatter model(*tokenizer_, *source);
        QVERIFY(model.uses_model_template());
        QCOMPARE(model.template_note(), "");
        QCOMPARE(model.kind(), ChatTemplateKind::ChatML);
        const ChatFormatter family(*tokenizer_, ChatTemplateKind::ChatML);
        QCOMPARE(model.stop_tokens(), family.stop_tokens());
        for (bool with_system : {false, true}) {
            std::vector<ChatMessage> msgs;
            if (with_system) msgs.push_back({Role::System, family.encode_content("Be brief.")});
            msgs.push_back({Role::User, family.encode_content("Name a colour.")});
            for (bool stopped : {false, true}) {
                const auto prompt = model.compose(msgs);
                QCOMPARE(prompt, family.compose(msgs));
                auto reply = family.encode_content(" Blue\n");
                if (stopped) reply.push_back(family.stop_tokens().front());
                QCOMPARE(model.follow_up_prefix(prompt, reply), family.follow_up_prefix(prompt, reply));
                msgs.push_back({Role::Assistant, reply});
                msgs.push_back({Role::User, family.encode_content("Another?")});
            }
        }
    }

    // Templates the formatter can neither take apart nor render whole fall back to the
    // family their markers match (or ChatML), and say why: in the note, and in the
    // sentence the user is shown.
    void fallsBackToTheMatchingFamily_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<ChatTemplateKind>("kind");
        QTest::addColumn<QString>("reason");
        QTest::addColumn<QString>("outcome");  // the warning's end, after the reason
        QTest::newRow("Gemma 2") << "google-gemma-2-2b-it.jinja" << ChatTemplateKind::Gemma << "System role not supported"
                                 << "), so Arbor uses the Gemma format";
        QTest::newRow("syntax error") << "{% for m in messages %}<|im_start|>" << ChatTemplateKind::ChatML
                                      << "missing {% endfor %}" << "), so Arbor uses the ChatML format";
        QTest::newRow("unknown filter") << "{% for m in messages %}{{ m.content | shout }}{% endfor %}"
                                        << ChatTemplateKind::ChatML << "shout"
                                        << ") and matches no known format, so Arbor uses the ChatML format";
    }

    void fallsBackToTheMatchingFamily() {
        QFETCH(QString, file);
        QFETCH(ChatTemplateKind, kind);
        QFETCH(QString, reason);
        QFETCH(QString, outcome);
        const std::string source = file.endsWith(".jinja") ? read_template(file) : file.toStdString();
        const ChatFormatter f(*tokenizer_, source);
        QVERIFY(!f.uses_model_template());
        QCOMPARE(f.kind(), kind);
        QVERIFY2(QString::fromStdString(f.template_note()).contains(reason), f.template_note().c_str());
        QCOMPARE(QString::fromStdString(f.fallback_warning()),
                 "the model's chat template could not be used (" + QString::fromStdString(f.template_note()) + outcome);
        QCOMPARE(model_load_warnings(*tokenizer_, f), std::vector<std::string>{f.fallback_warning()});
        QCOMPARE(f.compose({{Role::User, f.encode_content("Hi")}}),
                 ChatFormatter(*tokenizer_, kind).compose({{Role::User, f.encode_content("Hi")}}));
    }

    // Templates whose turns are not fixed pieces are rendered whole: the prompt is Python
    // jinja2's render (expected.json) tokenized as every prompt is, the text around the
    // messages with special tokens (plain text in this vocabulary) and each message's text
    // on its own without. Mistral Nemo's BOS/EOS texts are SmolLM2's here.
    void wholeTemplateComposesAsJinja2_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("conversation");
        for (const char* file : {"openai-gpt-oss-120b.jinja", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
                                 "mistralai-Mistral-7B-Instruct-v0.3.jinja"})
            for (const char* conversation : {"user_only", "system_and_user", "multi_turn", "unicode", "reply_with_thinking"})
                QTest::addRow("%s %s", file, conversation) << QString(file) << QString(conversation);
    }

    void wholeTemplateComposesAsJinja2() {
        QFETCH(QString, file);
        QFETCH(QString, conversation);
        const QJsonObject cases = QJsonDocument::fromJson(test::chat_template_fixture("conversations.json")).object();
        QString want = QJsonDocument::fromJson(test::chat_template_fixture("expected.json"))
                           .object()[file].toObject()[conversation].toObject()["output"].toString();
        QVERIFY(!want.isEmpty());
        const std::string source = read_template(file);
        for (const char* which : {"bos_token", "eos_token"}) {
            const QString text = cases["templates"].toObject()[file].toObject()[which].toString();
            const TokenId id = std::string(which) == "bos_token" ? tokenizer_->bos() : tokenizer_->eos();
            if (source.find(which) != std::string::npos) want.replace(text, QString::fromStdString(tokenizer_->token_bytes(id)));
        }
        const ChatFormatter f(*tokenizer_, source, test::pinned_now());
        QVERIFY(f.uses_model_template());
        QVERIFY(f.renders_whole());
        QCOMPARE(f.fallback_warning(), "");
        QVERIFY(model_load_warnings(*tokenizer_, f).empty());
        std::vector<ChatMessage> msgs;
        std::vector<std::pair<std::string, std::vector<TokenId>>> contents;
        for (const QJsonValue& m : cases["conversations"].toObject()[conversation].toObject()["messages"].toArray()) {
            const QString role = m["role"].toString();
            const std::string text = m["content"].toString().toStdString();
            msgs.push_back({role == "system" ? Role::System : role == "user" ? Role::User : Role::Assistant,
                            f.encode_content(text)});
            contents.emplace_back(text, msgs.back().content);
        }
        const auto got = f.compose(msgs);
        QCOMPARE(tokenizer_->decode(got), want.toStdString());
        QCOMPARE(got, test::spliced_ids(*tokenizer_, want.toStdString(), contents));
    }

    // A template the formatter cannot take apart but whose family composes exactly its
    // renders (Gemma 3 folds the system text into the first user turn as the Gemma family
    // does) is no warning; the same template folding it another way is rendered whole (the
    // family would not be its format), which keeps the whole continuation here since the
    // system text stays in the first turn.
    void aFamilyThatRendersAsTheTemplateIsNoWarning() {
        const std::string gemma3 = read_template("google-gemma-3-4b-it.jinja");
        const ChatFormatter same(*tokenizer_, gemma3);
        QVERIFY(!same.uses_model_template());
        QCOMPARE(same.kind(), ChatTemplateKind::Gemma);
        QVERIFY(!same.template_note().empty());
        QCOMPARE(same.fallback_warning(), "");
        std::string other = gemma3;
        const std::string two_newlines = "+ '\\n\\n'";  // in the template's source: + '\n\n'
        const size_t fold = other.find(two_newlines);
        QVERIFY(fold != std::string::npos);
        other.replace(fold, two_newlines.size(), "+ '\\n'");
        const ChatFormatter differs(*tokenizer_, other);
        QVERIFY(differs.renders_whole());
        QCOMPARE(differs.fallback_warning(), "");
        QVERIFY2(QString::fromStdString(differs.template_note()).endsWith("a follow-up computes only the new message"),
                 differs.template_note().c_str());
        const std::string prompt = tokenizer_->decode(differs.compose(
            {{Role::System, differs.encode_content("Be brief.")}, {Role::User, differs.encode_content("Hi")}}));
        QVERIFY2(prompt.find("<start_of_turn>user\nBe brief.\nHi<end_of_turn>\n<start_of_turn>model\n") !=
                     std::string::npos,
                 prompt.c_str());
    }

    // A file without a template is a warning too; a template that is used, or a family
    // asked for by name, is none.
    void warnsOnlyWhenTheTemplateIsNotUsed() {
        const ChatFormatter none(*tokenizer_, std::string_view());
        QCOMPARE(none.kind(), ChatTemplateKind::ChatML);
        QCOMPARE(none.fallback_warning(), "the model file has no chat template, so Arbor uses the ChatML format");
        QCOMPARE(model_load_warnings(*tokenizer_, none), std::vector<std::string>{none.fallback_warning()});
        const ChatFormatter own(*tokenizer_, *file_->get_string("tokenizer.chat_template"));
        QVERIFY(own.uses_model_template());
        QCOMPARE(own.fallback_warning(), "");
        QCOMPARE(ChatFormatter(*tokenizer_, ChatTemplateKind::Llama3).fallback_warning(), "");
        QVERIFY(model_load_warnings(*tokenizer_, own).empty());
    }

    // The prefix-cache invariant for every publisher template the formatter uses, with
    // real BPE ids (their markers are plain text in this vocabulary): the next prompt starts
    // with follow_up_prefix(messages, reply) and the new message; in pieces also with the
    // prompt and the reply. Rendered whole, gpt-oss keeps the prompt (up to the reply's
    // start); Mistral Nemo moves its system text, so only the follow-up prefix holds.
    void modelTemplatesKeepThePrefixInvariant() {
        for (const char* file :
             {"HuggingFaceTB-SmolLM3-3B.jinja", "Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
              "Mistral-Small-3.2-24B-Instruct-2506.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
              "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "ibm-granite-granite-3.3-2B-Instruct.jinja",
              "microsoft-Phi-4-mini-instruct.jinja", "openai-gpt-oss-120b.jinja",
              "mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistralai-Mistral-7B-Instruct-v0.3.jinja"}) {
            const ChatFormatter f(*tokenizer_, read_template(file));
            QVERIFY2(f.uses_model_template(), file);
            const bool gpt_oss = QString(file).startsWith("openai");
            QCOMPARE(f.renders_whole(), gpt_oss || QString(file).startsWith("mistralai"));
            std::vector<ChatMessage> msgs{{Role::System, f.encode_content("Be brief.")},
                                          {Role::User, f.encode_content("Name a colour.")}};
            for (int turn = 0; turn < 3; ++turn) {
                const auto prompt = f.compose(msgs);
                auto reply = f.encode_content(turn == 1 ? "Red\n\n" : " Blue");
                if (turn == 2) reply.push_back(f.stop_tokens().front());
                auto expected = f.follow_up_prefix(msgs, reply);
                if (!f.renders_whole()) QCOMPARE(expected, f.follow_up_prefix(prompt, reply));
                const auto user = f.encode_content("Another?");
                expected.insert(expected.end(), user.begin(), user.end());
                msgs.push_back({Role::Assistant, reply});
                msgs.push_back({Role::User, user});
                const auto next = f.compose(msgs);
                const QByteArray where = QString("%1, turn %2").arg(file).arg(turn).toUtf8();
                QVERIFY2(next.size() > expected.size() && std::equal(expected.begin(), expected.end(), next.begin()),
                         where.constData());
                auto kept = prompt;
                if (!f.renders_whole()) kept.insert(kept.end(), reply.begin(), reply.end());
                if (!f.renders_whole() || gpt_oss)
                    QVERIFY2(next.size() > kept.size() && std::equal(kept.begin(), kept.end(), next.begin()),
                             where.constData());
            }
        }
    }

    // Whether a composed prompt leaves a <think> open, read from its last ids with the real
    // tokenizer (the markers are several BPE tokens here): a generation prompt that opens
    // one (QwQ's and the DeepSeek-R1 distills' own templates) does; llama.cpp's copy of the
    // R1 template closes it again unless enable_thinking is set, Qwen3's writes nothing
    // then, and ChatML never opens one.
    void promptOpensThinkFromTheLastIds() {
        const std::string opening =
            "{%- for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endfor %}"
            "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}";
        const std::vector<ChatMessage> msgs{{Role::User, tokenizer_->encode("Name a colour.", false, false)}};
        const struct {
            std::string source;
            bool opens;
        } cases[] = {{opening, true},
                     {read_template("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"), false},
                     {read_template("Qwen-Qwen3-0.6B.jinja"), false},
                     {read_template("HuggingFaceTB-SmolLM2-135M-Instruct.jinja"), false}};
        for (const auto& c : cases) {
            const ChatFormatter f(*tokenizer_, c.source);
            QVERIFY(f.uses_model_template());
            const std::vector<TokenId> prompt = f.compose(msgs);
            QVERIFY2(prompt_opens_think(*tokenizer_, prompt) == c.opens, tokenizer_->decode(prompt).c_str());
        }
        QVERIFY(!prompt_opens_think(*tokenizer_, std::vector<TokenId>{}));
    }

    // Tools reach the model through its own template: the prompt is Python jinja2's render
    // of the same conversation with the same tools (expected.json's with_tools), tokenized
    // as every prompt is: the render's text between the messages with special tokens, each
    // message text on its own without. Llama 3.1's starts with bos_token, which is
    // SmolLM2's BOS text here.
    void toolsAreShownThroughTheModelsTemplate_data() {
        QTest::addColumn<QString>("file");
        QTest::newRow("Qwen3") << "Qwen-Qwen3-0.6B.jinja";
        QTest::newRow("Qwen2.5") << "Qwen-Qwen2.5-7B-Instruct.jinja";
        QTest::newRow("Llama 3.1") << "meta-llama-Llama-3.1-8B-Instruct.jinja";
    }

    void toolsAreShownThroughTheModelsTemplate() {
        QFETCH(QString, file);
        const QJsonObject cases = QJsonDocument::fromJson(test::chat_template_fixture("conversations.json")).object();
        const QJsonObject conversation = cases["conversations"].toObject()["with_tools"].toObject();
        QString want = QJsonDocument::fromJson(test::chat_template_fixture("expected.json"))
                           .object()[file].toObject()["with_tools"].toObject()["output"].toString();
        QVERIFY(!want.isEmpty());
        const QString bos = cases["templates"].toObject()[file].toObject()["bos_token"].toString();
        if (!bos.isEmpty()) want.replace(bos, QString::fromStdString(tokenizer_->token_bytes(tokenizer_->bos())));
        const ChatFormatter f(*tokenizer_, read_template(file));
        QVERIFY(f.uses_model_template());
        std::vector<ChatMessage> msgs;
        std::vector<TokenId> expected;
        const std::string text = want.toStdString();
        size_t at = 0;
        for (const QJsonValue& m : conversation["messages"].toArray()) {
            const std::string content = m["content"].toString().toStdString();
            msgs.push_back({m["role"].toString() == "system" ? Role::System : Role::User, f.encode_content(content)});
            const size_t found = text.find(content, at);
            QVERIFY(found != std::string::npos);
            for (const auto& ids : {tokenizer_->encode(text.substr(at, found - at), false, true), msgs.back().content})
                expected.insert(expected.end(), ids.begin(), ids.end());
            at = found + content.size();
        }
        const auto tail = tokenizer_->encode(text.substr(at), false, true);
        expected.insert(expected.end(), tail.begin(), tail.end());
        const auto got = f.compose_with_tools(msgs, test::to_value(conversation["tools"]));
        QCOMPARE(tokenizer_->decode(got), text);
        QCOMPARE(got, expected);
        QVERIFY(got.size() > f.compose(msgs).size() + 50);  // the definitions are in it
    }

    // Tools need a template that shows them; anything else is an error that says so.
    void toolsWithoutATemplateThatShowsThemAreRefused() {
        const jinja::Value tools(jinja::Array{jinja::Object{{"type", "function"},
                                                            {"function", jinja::Object{{"name", "get_weather"}}}}});
        const std::vector<ChatMessage> msgs{{Role::User, tokenizer_->encode("Hi", false, false)}};
        const auto error_of = [&](const ChatFormatter& f) -> QString {
            try {
                (void)f.compose_with_tools(msgs, tools);
            } catch (const Error& e) {
                return QString::fromStdString(e.what());
            }
            return "no error";
        };
        // SmolLM2's template ignores tools.
        QCOMPARE(error_of(ChatFormatter(*tokenizer_, *file_->get_string("tokenizer.chat_template"))),
                 "the model's chat template does not show tools to the model");
        QCOMPARE(error_of(ChatFormatter(*tokenizer_, ChatTemplateKind::ChatML)),
                 "tools need the model's own chat template");
        const ChatFormatter gemma2(*tokenizer_, read_template("google-gemma-2-2b-it.jinja"));  // refuses system turns
        QVERIFY(!gemma2.fallback_warning().empty());
        QCOMPARE(error_of(gemma2), "tools need the model's own chat template, and " +
                                       QString::fromStdString(gemma2.fallback_warning()));
        // A template that raises on the tools it is given.
        QVERIFY(error_of(ChatFormatter(*tokenizer_, std::string(
                    "{% if tools %}{{ raise_exception('no tools today') }}{% endif %}"
                    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")))
                    .contains("could not render these messages with tools: "));
    }

private:
    static std::string read_template(const QString& file) { return test::chat_template_fixture(file).toStdString(); }

    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

QTEST_GUILESS_MAIN(TestChatTemplateModel)
#include "test_chat_template_model.moc"
