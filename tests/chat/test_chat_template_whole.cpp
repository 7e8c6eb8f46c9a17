// Templates whose turns are not fixed pieces (gpt-oss, Mistral Nemo) rendered whole for
// every prompt, with a tokenizer that round-trips and knows gpt-oss's markers as special
// tokens (byte_tokenizer.h): the prompts are Python jinja2's renders (expected.json), the
// follow-up prefix is what the next prompt starts with, and a gpt-oss reply's analysis is
// left out of the history as its template leaves it out.
#include "byte_tokenizer.h"
#include "chat_template_fixtures.h"

#include "arbor/chat_template.h"
#include "arbor/load_warnings.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace arbor;
using arbor::test::ByteTokenizer;

namespace {

constexpr const char* kGptOss = "openai-gpt-oss-120b.jinja";
constexpr const char* kNemo = "mistralai-Mistral-Nemo-Instruct-2407.jinja";

std::string read_template(const QString& file) { return test::chat_template_fixture(file).toStdString(); }

// The BOS/EOS each model's tokenizer has (conversations.json passes the same texts).
ByteTokenizer tokenizer_for(const QString& file) {
    return file == kGptOss ? ByteTokenizer("<|startoftext|>", "<|return|>") : ByteTokenizer("<s>", "</s>", true);
}

Role role_of(const QString& name) {
    return name == "system" ? Role::System : name == "assistant" ? Role::Assistant : Role::User;
}

bool starts_with(const std::vector<TokenId>& all, const std::vector<TokenId>& prefix) {
    return all.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), all.begin());
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

} // namespace

class TestChatTemplateWhole : public QObject {
    Q_OBJECT

private slots:
    // Every conversation with a generation prompt, as jinja2 renders it, token for token;
    // with_tools through compose_with_tools.
    void rendersAsJinja2_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("conversation");
        for (const char* file : {kGptOss, kNemo})
            for (const char* conversation :
                 {"user_only", "system_and_user", "multi_turn", "unicode", "reply_with_thinking", "with_tools"})
                QTest::addRow("%s %s", file, conversation) << QString(file) << QString(conversation);
    }

    void rendersAsJinja2() {
        QFETCH(QString, file);
        QFETCH(QString, conversation);
        const QJsonObject cases = QJsonDocument::fromJson(test::chat_template_fixture("conversations.json")).object();
        const QJsonObject c = cases["conversations"].toObject()[conversation].toObject();
        const std::string want = QJsonDocument::fromJson(test::chat_template_fixture("expected.json"))
                                     .object()[file].toObject()[conversation].toObject()["output"].toString()
                                     .toStdString();
        QVERIFY(!want.empty());
        const ByteTokenizer tok = tokenizer_for(file);
        const ChatFormatter f(tok, read_template(file), test::pinned_now());
        QVERIFY(f.uses_model_template());
        QVERIFY(f.renders_whole());
        std::vector<ChatMessage> msgs;
        std::vector<std::pair<std::string, std::vector<TokenId>>> contents;
        for (const QJsonValue& m : c["messages"].toArray()) {
            const std::string text = m["content"].toString().toStdString();
            msgs.push_back({role_of(m["role"].toString()), f.encode_content(text)});
            contents.emplace_back(text, msgs.back().content);
        }
        const auto got = c.contains("tools") ? f.compose_with_tools(msgs, test::to_value(c["tools"])) : f.compose(msgs);
        QCOMPARE(tok.render(got), want);
        QCOMPARE(got, test::spliced_ids(tok, want, contents));
    }

    // Rendered whole is the model's own format: no warning, and a note that says so.
    void wholeIsNoFailure() {
        for (const char* file : {kGptOss, kNemo}) {
            const ByteTokenizer tok = tokenizer_for(file);
            const ChatFormatter f(tok, read_template(file));
            QVERIFY(f.uses_model_template());
            QCOMPARE(f.fallback_warning(), "");
            QVERIFY(model_load_warnings(tok, f).empty());
            QVERIFY2(QString::fromStdString(f.template_note()).startsWith("rendered whole"), f.template_note().c_str());
        }
        const ByteTokenizer tok = tokenizer_for(kGptOss);
        QVERIFY2(QString::fromStdString(ChatFormatter(tok, read_template(kGptOss)).template_note())
                     .endsWith("recomputes from the last reply's start (the template shows a reply differently in "
                               "the history)"),
                 ChatFormatter(tok, read_template(kGptOss)).template_note().c_str());
    }

    // gpt-oss ends a reply at <|return|> (or a tool call at <|call|>); <|end|> closes its
    // analysis message too, so it must not stop the reply.
    void stopTokens() {
        const ByteTokenizer oss = tokenizer_for(kGptOss);
        auto stops = ChatFormatter(oss, read_template(kGptOss)).stop_tokens();
        std::sort(stops.begin(), stops.end());
        QCOMPARE(stops, (std::vector<TokenId>{ByteTokenizer::id_of("<|return|>"), ByteTokenizer::id_of("<|call|>")}));
        const ByteTokenizer nemo = tokenizer_for(kNemo);
        QCOMPARE(ChatFormatter(nemo, read_template(kNemo)).stop_tokens(), std::vector<TokenId>{nemo.eos()});
    }

    // A gpt-oss reply as the model writes it (analysis, then the final message) is shown
    // in the history as its final message only, the way the template renders replies.
    void analysisIsLeftOutOfTheHistory() {
        const ByteTokenizer tok = tokenizer_for(kGptOss);
        const ChatFormatter f(tok, read_template(kGptOss), test::pinned_now());
        const auto special = [&](std::string_view text) { return tok.encode(text, false, true); };
        const auto written = concat(concat(concat(concat(special("<|channel|>analysis<|message|>"),
                                                         f.encode_content("The user asks for a capital.")),
                                                  special("<|end|><|start|>assistant<|channel|>final<|message|>")),
                                           f.encode_content("Paris.")),
                                    special("<|return|>"));
        const std::vector<ChatMessage> question{{Role::User, f.encode_content("Capital of France?")}};
        const ChatMessage next{Role::User, f.encode_content("And of Spain?")};
        const auto with_analysis = f.compose({question[0], {Role::Assistant, written}, next});
        QCOMPARE(with_analysis, f.compose({question[0], {Role::Assistant, f.encode_content("Paris.")}, next}));
        const std::string text = tok.render(with_analysis);
        QVERIFY2(text.find("<|start|>assistant<|channel|>final<|message|>Paris.<|end|><|start|>user") !=
                     std::string::npos,
                 text.c_str());
        QVERIFY(text.find("capital.") == std::string::npos);
        QVERIFY(starts_with(with_analysis, f.compose(question)));
        QCOMPARE(f.follow_up_prefix(question, written),
                 concat(f.compose(question), special("<|channel|>final<|message|>Paris.<|end|><|start|>user<|message|>")));
    }

    // Turn after turn the next prompt starts with follow_up_prefix(messages, reply) and
    // the new user message, and keeps what the template keeps of the previous prompt.
    void followUpPrefixStartsTheNextPrompt_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("with_system");
        QTest::addColumn<int>("keeps");  // 2: the prompt and the reply; 1: the prompt; 0: less
        QTest::newRow("gpt-oss") << kGptOss << false << 1;
        QTest::newRow("gpt-oss, system") << kGptOss << true << 1;
        QTest::newRow("Nemo") << kNemo << false << 2;
        // Nemo writes the system text into the last user turn, wherever that is.
        QTest::newRow("Nemo, system") << kNemo << true << 0;
    }

    void followUpPrefixStartsTheNextPrompt() {
        QFETCH(QString, file);
        QFETCH(bool, with_system);
        QFETCH(int, keeps);
        const ByteTokenizer tok = tokenizer_for(file);
        const ChatFormatter f(tok, read_template(file), test::pinned_now());
        std::vector<ChatMessage> msgs;
        if (with_system) msgs.push_back({Role::System, f.encode_content("Be brief.")});
        msgs.push_back({Role::User, f.encode_content("Name a colour.")});
        const char* replies[] = {" Blue", "Red\n\n", "Green. ", "it's yellow"};
        for (int turn = 0; turn < 4; ++turn) {
            const auto prompt = f.compose(msgs);
            auto reply = f.encode_content(replies[turn]);
            if (turn % 2 == 1) reply.push_back(f.stop_tokens().front());
            const auto prefix = f.follow_up_prefix(msgs, reply);
            QVERIFY(!prefix.empty());
            QVERIFY(f.follow_up_prefix(prompt, reply).empty());  // the prompt alone does not tell
            const auto user = f.encode_content("Another?");
            msgs.push_back({Role::Assistant, reply});
            msgs.push_back({Role::User, user});
            const auto next = f.compose(msgs);
            QVERIFY2(starts_with(next, concat(prefix, user)), qPrintable(QString("turn %1").arg(turn)));
            QCOMPARE(starts_with(next, concat(prompt, reply)), keeps == 2);
            QCOMPARE(starts_with(next, prompt), keeps >= 1);
        }
    }

    // The date a template shows is the formatter's (the model's load), not the clock's at
    // each prompt, so a conversation's prompts do not change at midnight.
    void dateIsTheFormattersNow() {
        const ByteTokenizer tok = tokenizer_for(kGptOss);
        const std::vector<ChatMessage> msgs{{Role::User, tok.encode("Hi", false, false)}};
        const auto shown = [&](std::time_t now) {
            return tok.render(ChatFormatter(tok, read_template(kGptOss), now).compose(msgs));
        };
        QVERIFY(shown(test::pinned_now()).find("Current date: 2026-11-27\n") != std::string::npos);
        QVERIFY(shown(test::pinned_now() + 24 * 3600).find("Current date: 2026-11-28\n") != std::string::npos);
    }

    // A conversation the template refuses (Nemo's roles must alternate) is composed by the
    // family its markers match rather than not at all, its follow-up prefix is the family's
    // (the next prompt, composed by the family too, begins with it), and compose() says why
    // for the front ends (the template's own message).
    void aRefusedConversationUsesTheFamily() {
        const ByteTokenizer tok = tokenizer_for(kNemo);
        const ChatFormatter f(tok, read_template(kNemo));
        QCOMPARE(f.kind(), ChatTemplateKind::Llama2);
        const std::vector<ChatMessage> twice{{Role::User, f.encode_content("One.")},
                                             {Role::User, f.encode_content("Two.")}};
        QCOMPARE(f.compose(twice), ChatFormatter(tok, ChatTemplateKind::Llama2).compose(twice));
        QVERIFY(f.follow_up_prefix({twice[0]}, concat(f.encode_content("Hm."), {tok.eos()})).size() > 0);
        const ChatFormatter family(tok, ChatTemplateKind::Llama2);
        const std::vector<TokenId> hm = f.encode_content("Hm.");
        const std::vector<TokenId> follow_up = f.follow_up_prefix(twice, hm);
        QCOMPARE(follow_up, family.follow_up_prefix(family.compose(twice), hm));
        std::vector<ChatMessage> next = twice;
        next.push_back({Role::Assistant, hm});
        next.push_back({Role::User, f.encode_content("Three.")});
        QVERIFY(starts_with(f.compose(next), concat(follow_up, f.encode_content("Three."))));
        std::string refused;
        QCOMPARE(f.compose(twice, &refused), ChatFormatter(tok, ChatTemplateKind::Llama2).compose(twice));
        const QString why = QString::fromStdString(refused);
        // In the template's own words, without the renderer's line number.
        QVERIFY2(why.startsWith(QString::fromUtf8("the model's chat template refuses this conversation (\u201c")) &&
                     why.contains("alternate") && !why.contains("template line") && why.contains("Llama 2 format"),
                 qPrintable(why));
        f.compose({twice[0]}, &refused);
        QCOMPARE(refused, std::string());
        refused = "stale";
        ChatFormatter(tok, ChatTemplateKind::Llama2).compose(twice, &refused);
        QCOMPARE(refused, std::string());  // a family: nothing refused
    }
};

QTEST_GUILESS_MAIN(TestChatTemplateWhole)
#include "test_chat_template_whole.moc"
