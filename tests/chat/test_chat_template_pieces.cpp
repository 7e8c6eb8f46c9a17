// Publishers' templates taken apart into turn pieces: which ones the formatter can use,
// the reason for the others, and that the pieces (derived from sentinel renders) rebuild
// what Python's jinja2 rendered for real conversations (tests/data/chat_templates).
#include "chat_template_pieces.h"
#include "chat_template_fixtures.h"

#include <QJsonDocument>
#include <QtTest>

using namespace arbor;

namespace {

QByteArray read_fixture(const QString& name) { return test::chat_template_fixture(name); }

std::variant<ChatTemplatePieces, std::string> derive(const QString& file) {
    const QJsonObject tokens =
        QJsonDocument::fromJson(read_fixture("conversations.json")).object()["templates"].toObject()[file].toObject();
    return derive_chat_template_pieces(read_fixture(file).toStdString(), tokens["bos_token"].toString().toStdString(),
                                       tokens["eos_token"].toString().toStdString(),
                                       jinja::Object{{"strftime_now", test::pinned_strftime_now()}});
}

// The conversation as the formatter lays it out, in text.
std::string compose(const ChatTemplatePieces& p, const QJsonArray& messages) {
    std::string out = p.prefix;
    bool has_system = false;
    for (const QJsonValue& m : messages) has_system |= m["role"].toString() == "system";
    if (!has_system) out += p.default_system;
    for (const QJsonValue& m : messages) {
        const QString role = m["role"].toString();
        const std::string content = m["content"].toString().toStdString();
        if (role == "system") out += p.system_header + content + p.system_end;
        else if (role == "user") out += p.user_header + content + p.user_end;
        else out += p.history_assistant_header + content + p.after_reply;
    }
    return out + p.assistant_header;
}

} // namespace

class TestChatTemplatePieces : public QObject {
    Q_OBJECT

private slots:
    void usable_data() {
        QTest::addColumn<QString>("file");
        for (const char* file :
             {"HuggingFaceTB-SmolLM2-135M-Instruct.jinja", "HuggingFaceTB-SmolLM3-3B.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja",
              "Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja",
              "Mistral-Small-3.2-24B-Instruct-2506.jinja", "microsoft-Phi-3.5-mini-instruct.jinja",
              "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "ibm-granite-granite-3.3-2B-Instruct.jinja",
              "microsoft-Phi-4-mini-instruct.jinja"})
            QTest::newRow(file) << QString(file);
    }

    // Pieces rebuild jinja2's render of conversations with real texts, with and without
    // a system message (contents without surrounding spaces: Llama 3 trims them, and
    // the formatter sends content as given).
    void usable() {
        QFETCH(QString, file);
        const auto derived = derive(file);
        if (const auto* reason = std::get_if<std::string>(&derived)) QFAIL(reason->c_str());
        const auto& p = std::get<ChatTemplatePieces>(derived);
        const QJsonObject cases = QJsonDocument::fromJson(read_fixture("conversations.json")).object();
        const QJsonObject expected = QJsonDocument::fromJson(read_fixture("expected.json")).object()[file].toObject();
        for (const char* conversation : {"system_and_user", "unicode"}) {
            const QJsonArray messages = cases["conversations"].toObject()[conversation].toObject()["messages"].toArray();
            QCOMPARE(compose(p, messages), expected[conversation].toObject()["output"].toString().toStdString());
        }
    }

    void refused_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("reason");
        QTest::newRow("Gemma 2 raises for a system message")
            << "google-gemma-2-2b-it.jinja" << "the template raised an error: System role not supported";
        QTest::newRow("Mistral Nemo moves the system text into the last user turn")
            << "mistralai-Mistral-Nemo-Instruct-2407.jinja" << "does not appear exactly once";
        QTest::newRow("gpt-oss renders replies in the history on another channel")
            << "openai-gpt-oss-120b.jinja" << "assistant messages in the history open differently";
        QTest::newRow("Mistral v0.3 opens a reply in the history with a space the generation prompt lacks")
            << "mistralai-Mistral-7B-Instruct-v0.3.jinja" << "assistant messages in the history open differently";
    }

    void refused() {
        QFETCH(QString, file);
        QFETCH(QString, reason);
        const auto derived = derive(file);
        const auto* got = std::get_if<std::string>(&derived);
        QVERIFY(got);
        QVERIFY2(QString::fromStdString(*got).contains(reason), got->c_str());
    }

    // The default model's template is ChatML with a default system prompt, which the
    // formatter does not send (as before templates were rendered).
    void smolLM2PiecesAreChatML() {
        const auto derived = derive("HuggingFaceTB-SmolLM2-135M-Instruct.jinja");
        const auto& p = std::get<ChatTemplatePieces>(derived);
        QCOMPARE(p.prefix, "");
        QCOMPARE(p.system_header, "<|im_start|>system\n");
        QCOMPARE(p.system_end, "<|im_end|>\n");
        QCOMPARE(p.user_header, "<|im_start|>user\n");
        QCOMPARE(p.user_end, "<|im_end|>\n");
        QCOMPARE(p.assistant_header, "<|im_start|>assistant\n");
        QCOMPARE(p.after_reply, "<|im_end|>\n");
        QCOMPARE(p.default_system,
                 "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n");
    }

    void brokenTemplatesAreRefusedWithTheError() {
        for (const char* source : {"{% for m in messages %}", "{{ messages|frobnicate }}", "{{ raise_exception('no') }}"}) {
            const auto derived = derive_chat_template_pieces(source, "<s>", "</s>");
            QVERIFY2(std::holds_alternative<std::string>(derived), source);
        }
        // Renders, but has no turns to take apart.
        const auto constant = derive_chat_template_pieces("hello", "<s>", "</s>");
        QVERIFY(std::holds_alternative<std::string>(constant));
    }
};

QTEST_GUILESS_MAIN(TestChatTemplatePieces)
#include "test_chat_template_pieces.moc"
