// Chat templates against the default model's real tokenizer and template metadata.
#include "chat_template_fixtures.h"
#include "test_support.h"

#include "arbor/chat_template.h"
#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

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

    // Templates the formatter cannot take apart fall back to the family their markers
    // match (or ChatML), and say why.
    void fallsBackToTheMatchingFamily_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<ChatTemplateKind>("kind");
        QTest::addColumn<QString>("reason");
        QTest::newRow("Gemma 2") << "google-gemma-2-2b-it.jinja" << ChatTemplateKind::Gemma << "System role not supported";
        QTest::newRow("Mistral Nemo") << "mistralai-Mistral-Nemo-Instruct-2407.jinja" << ChatTemplateKind::Llama2
                                      << "does not appear exactly once";
        QTest::newRow("gpt-oss") << "openai-gpt-oss-120b.jinja" << ChatTemplateKind::ChatML
                                 << "assistant messages in the history open differently";
        QTest::newRow("syntax error") << "" << ChatTemplateKind::ChatML << "missing {% endfor %}";
    }

    void fallsBackToTheMatchingFamily() {
        QFETCH(QString, file);
        QFETCH(ChatTemplateKind, kind);
        QFETCH(QString, reason);
        const std::string source = file.isEmpty() ? "{% for m in messages %}<|im_start|>" : read_template(file);
        const ChatFormatter f(*tokenizer_, source);
        QVERIFY(!f.uses_model_template());
        QCOMPARE(f.kind(), kind);
        QVERIFY2(QString::fromStdString(f.template_note()).contains(reason), f.template_note().c_str());
        QCOMPARE(f.compose({{Role::User, f.encode_content("Hi")}}),
                 ChatFormatter(*tokenizer_, kind).compose({{Role::User, f.encode_content("Hi")}}));
    }

    // The prefix-cache invariant for every publisher template the formatter uses, with
    // real BPE ids (their markers are plain text in this vocabulary).
    void modelTemplatesKeepThePrefixInvariant() {
        for (const char* file :
             {"HuggingFaceTB-SmolLM3-3B.jinja", "Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
              "Mistral-Small-3.2-24B-Instruct-2506.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
              "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "ibm-granite-granite-3.3-2B-Instruct.jinja"}) {
            const ChatFormatter f(*tokenizer_, read_template(file));
            QVERIFY2(f.uses_model_template(), file);
            std::vector<ChatMessage> msgs{{Role::System, f.encode_content("Be brief.")},
                                          {Role::User, f.encode_content("Name a colour.")}};
            for (int turn = 0; turn < 3; ++turn) {
                const auto prompt = f.compose(msgs);
                const auto reply = f.encode_content(turn == 1 ? "Red\n\n" : " Blue");
                auto expected = f.follow_up_prefix(prompt, reply);
                const auto user = f.encode_content("Another?");
                expected.insert(expected.end(), user.begin(), user.end());
                msgs.push_back({Role::Assistant, reply});
                msgs.push_back({Role::User, user});
                const auto next = f.compose(msgs);
                QVERIFY2(next.size() > expected.size() && std::equal(expected.begin(), expected.end(), next.begin()),
                         qPrintable(QString("%1, turn %2").arg(file).arg(turn)));
            }
        }
    }

private:
    static std::string read_template(const QString& file) { return test::chat_template_fixture(file).toStdString(); }

    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tokenizer_;
};

QTEST_GUILESS_MAIN(TestChatTemplateModel)
#include "test_chat_template_model.moc"
