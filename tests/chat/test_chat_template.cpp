#include "byte_tokenizer.h"

#include "arbor/chat_template.h"

#include <QtTest>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>

using arbor::ChatFormatter;
using arbor::ChatMessage;
using arbor::ChatTemplateKind;
using arbor::Role;
using arbor::TokenId;
using arbor::test::ByteTokenizer;

Q_DECLARE_METATYPE(ChatTemplateKind)

namespace {

constexpr ChatTemplateKind kAllKinds[] = {ChatTemplateKind::ChatML, ChatTemplateKind::Llama3,
                                          ChatTemplateKind::Llama2, ChatTemplateKind::Gemma,
                                          ChatTemplateKind::Zephyr};

// The BOS/EOS tokens each family's models use.
ByteTokenizer tokenizer_for(ChatTemplateKind kind) {
    switch (kind) {
    case ChatTemplateKind::ChatML: return ByteTokenizer("<|endoftext|>", "<|endoftext|>");
    case ChatTemplateKind::Llama3: return ByteTokenizer("<|begin_of_text|>", "<|end_of_text|>");
    case ChatTemplateKind::Llama2: return ByteTokenizer("<s>", "</s>", true);
    case ChatTemplateKind::Gemma: return ByteTokenizer("<bos>", "<eos>", true);
    case ChatTemplateKind::Zephyr: return ByteTokenizer("<s>", "</s>");
    }
    return ByteTokenizer("<s>", "</s>");
}

bool starts_with(const std::vector<TokenId>& all, const std::vector<TokenId>& prefix) {
    return all.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), all.begin());
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Captures what the code under test logs through spdlog's default logger.
class LogCapture {
public:
    LogCapture() : previous_(spdlog::default_logger()) {
        auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
        spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
    }
    ~LogCapture() { spdlog::set_default_logger(previous_); }
    std::string text() const { return stream_.str(); }

private:
    std::ostringstream stream_;
    std::shared_ptr<spdlog::logger> previous_;
};

} // namespace

class TestChatTemplate : public QObject {
    Q_OBJECT

private slots:
    void detectsFamilies_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<ChatTemplateKind>("kind");
        QTest::newRow("chatml") << QString(
            "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
            "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
            "{% endif %}") << ChatTemplateKind::ChatML;
        QTest::newRow("llama3") << QString(
            "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
            "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
            "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
            "{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant"
            "<|end_header_id|>\\n\\n' }}{% endif %}") << ChatTemplateKind::Llama3;
        QTest::newRow("llama2") << QString(
            "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
            "messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
            "{% endif %}{% for message in loop_messages %}{% if loop.index0 == 0 and system_message != false %}"
            "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}"
            "{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
            "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
            "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}") << ChatTemplateKind::Llama2;
        QTest::newRow("mistral") << QString(
            "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
            "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
            "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif "
            "message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% endif %}{% endfor %}")
            << ChatTemplateKind::Llama2;
        QTest::newRow("gemma") << QString(
            "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
            "{% endif %}{% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}"
            "{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + "
            "message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}"
            "{{'<start_of_turn>model\\n'}}{% endif %}") << ChatTemplateKind::Gemma;
        QTest::newRow("zephyr") << QString(
            "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\\n' + "
            "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\\n' + "
            "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\\n'  + "
            "message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n"
            "{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}") << ChatTemplateKind::Zephyr;
    }

    void detectsFamilies() {
        QFETCH(QString, source);
        QFETCH(ChatTemplateKind, kind);
        LogCapture log;
        bool recognised = false;
        const std::string text = source.toStdString();
        QCOMPARE(arbor::detect_chat_template(text, &recognised), kind);
        QVERIFY(recognised);
        QVERIFY2(log.text().empty(), log.text().c_str());
    }

    void unknownTemplateFallsBackWithWarning() {
        for (const std::string source : {std::string("{% for m in messages %}### {{ m.role }}: {{ m.content }}\n"
                                                     "{% endfor %}### assistant:"),
                                         std::string()}) {
            LogCapture log;
            bool recognised = true;
            QCOMPARE(arbor::detect_chat_template(source, &recognised), ChatTemplateKind::ChatML);
            QVERIFY(!recognised);
            QVERIFY2(log.text().find("[warning]") != std::string::npos, log.text().c_str());
            QVERIFY2(log.text().find("ChatML") != std::string::npos, log.text().c_str());
        }
    }

    void rendersReferenceText_data() {
        QTest::addColumn<ChatTemplateKind>("kind");
        QTest::addColumn<bool>("with_system");
        QTest::addColumn<QString>("expected");
        QTest::newRow("chatml") << ChatTemplateKind::ChatML << true << QString(
            "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            "Hello!<|im_end|>\n<|im_start|>user\nMore<|im_end|>\n<|im_start|>assistant\n");
        QTest::newRow("llama3") << ChatTemplateKind::Llama3 << true << QString(
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nsys<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nMore<|eot_id|><|start_header_id|>assistant"
            "<|end_header_id|>\n\n");
        QTest::newRow("llama2") << ChatTemplateKind::Llama2 << true << QString(
            "<s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] More [/INST]");
        QTest::newRow("llama2-nosys") << ChatTemplateKind::Llama2 << false << QString(
            "<s>[INST] Hi [/INST] Hello! </s><s>[INST] More [/INST]");
        QTest::newRow("gemma") << ChatTemplateKind::Gemma << true << QString(
            "<bos><start_of_turn>user\nsys\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nMore<end_of_turn>\n<start_of_turn>model\n");
        QTest::newRow("gemma-nosys") << ChatTemplateKind::Gemma << false << QString(
            "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nMore<end_of_turn>\n<start_of_turn>model\n");
        QTest::newRow("zephyr") << ChatTemplateKind::Zephyr << true << QString(
            "<|system|>\nsys</s>\n<|user|>\nHi</s>\n<|assistant|>\nHello!</s>\n<|user|>\nMore</s>\n<|assistant|>\n");
    }

    void rendersReferenceText() {
        QFETCH(ChatTemplateKind, kind);
        QFETCH(bool, with_system);
        QFETCH(QString, expected);
        const ByteTokenizer tok = tokenizer_for(kind);
        const ChatFormatter f(tok, kind);
        // Llama 2 puts spaces around a reply; see chat_template.h.
        const std::string reply = kind == ChatTemplateKind::Llama2 ? " Hello! " : "Hello!";
        std::vector<ChatMessage> msgs;
        if (with_system) msgs.push_back({Role::System, f.encode_content("sys")});
        msgs.push_back({Role::User, f.encode_content("Hi")});
        msgs.push_back({Role::Assistant, f.encode_content(reply)});
        msgs.push_back({Role::User, f.encode_content("More")});
        QCOMPARE(QString::fromStdString(tok.render(f.compose(msgs))), expected);
    }

    void markersAreSpecialTokensContentIsNot() {
        const ByteTokenizer tok = tokenizer_for(ChatTemplateKind::ChatML);
        const ChatFormatter f(tok, ChatTemplateKind::ChatML);
        const TokenId im_start = ByteTokenizer::id_of("<|im_start|>");
        const TokenId im_end = ByteTokenizer::id_of("<|im_end|>");
        // A user typing a marker gets plain bytes, not a turn boundary.
        const auto content = f.encode_content("<|im_end|>");
        QCOMPARE(content.size(), size_t(10));
        QVERIFY(std::find(content.begin(), content.end(), im_end) == content.end());
        const auto prompt = f.compose({{Role::User, content}});
        QCOMPARE(prompt.front(), im_start);
        QCOMPARE(std::count(prompt.begin(), prompt.end(), im_end), 1);
        QCOMPARE(std::count(prompt.begin(), prompt.end(), im_start), 2);
    }

    void stopTokens() {
        const auto ids = [](std::initializer_list<const char*> texts) {
            std::vector<TokenId> out;
            for (const char* t : texts) out.push_back(ByteTokenizer::id_of(t));
            return out;
        };
        const std::pair<ChatTemplateKind, std::vector<TokenId>> cases[] = {
            {ChatTemplateKind::ChatML, ids({"<|im_end|>", "<|endoftext|>"})},
            {ChatTemplateKind::Llama3, ids({"<|eot_id|>", "<|end_of_text|>"})},
            {ChatTemplateKind::Llama2, ids({"</s>"})},
            {ChatTemplateKind::Gemma, ids({"<end_of_turn>", "<eos>"})},
            {ChatTemplateKind::Zephyr, ids({"</s>"})},
        };
        for (const auto& [kind, expected] : cases) {
            const ByteTokenizer tok = tokenizer_for(kind);
            QCOMPARE(ChatFormatter(tok, kind).stop_tokens(), expected);
        }
    }

    void bosFollowsTemplateAndVocabulary() {
        // ChatML and Zephyr have no BOS in their text, but a vocabulary that asks for one
        // gets it once at the start.
        for (ChatTemplateKind kind : {ChatTemplateKind::ChatML, ChatTemplateKind::Zephyr}) {
            const ByteTokenizer plain("<s>", "</s>", false), with_bos("<s>", "</s>", true);
            const std::vector<ChatMessage> msgs{{Role::User, plain.encode("Hi", false, false)}};
            const auto a = ChatFormatter(plain, kind).compose(msgs);
            const auto b = ChatFormatter(with_bos, kind).compose(msgs);
            QVERIFY(a.front() != ByteTokenizer::id_of("<s>"));
            QCOMPARE(b.front(), ByteTokenizer::id_of("<s>"));
            QCOMPARE(std::vector<TokenId>(b.begin() + 1, b.end()), a);
        }
        // Llama 3 and Gemma start with BOS even when the vocabulary does not add it.
        const ByteTokenizer l3("<|begin_of_text|>", "<|end_of_text|>", false);
        const auto p = ChatFormatter(l3, ChatTemplateKind::Llama3).compose({{Role::User, {'x'}}});
        QCOMPARE(p.front(), ByteTokenizer::id_of("<|begin_of_text|>"));
        QCOMPARE(std::count(p.begin(), p.end(), p.front()), 1);
    }

    void systemFoldingEdgeCases() {
        // Llama 2 and Gemma: a system message with no user message after it becomes a user
        // turn of its own; several system messages are folded in order.
        const ByteTokenizer tok = tokenizer_for(ChatTemplateKind::Gemma);
        const ChatFormatter g(tok, ChatTemplateKind::Gemma);
        const std::vector<ChatMessage> msgs{{Role::System, g.encode_content("a")},
                                            {Role::System, g.encode_content("b")},
                                            {Role::User, g.encode_content("Hi")},
                                            {Role::Assistant, g.encode_content("Yo")},
                                            {Role::System, g.encode_content("c")}};
        QCOMPARE(QString::fromStdString(tok.render(g.compose(msgs))),
                 QString("<bos><start_of_turn>user\na\n\nb\n\nHi<end_of_turn>\n<start_of_turn>model\nYo<end_of_turn>\n"
                         "<start_of_turn>user\nc\n\n<end_of_turn>\n<start_of_turn>model\n"));
        const ByteTokenizer t2 = tokenizer_for(ChatTemplateKind::Llama2);
        const ChatFormatter l2(t2, ChatTemplateKind::Llama2);
        QCOMPARE(QString::fromStdString(t2.render(l2.compose({{Role::System, l2.encode_content("s")}}))),
                 QString("<s>[INST] <<SYS>>\ns\n<</SYS>>\n\n [/INST]"));
    }

    void replyEndingWithEndOfTurnIsNotClosedTwice() {
        for (ChatTemplateKind kind : kAllKinds) {
            const ByteTokenizer tok = tokenizer_for(kind);
            const ChatFormatter f(tok, kind);
            const std::vector<ChatMessage> base{{Role::User, f.encode_content("Hi")}};
            auto closed = f.encode_content("Yo");
            closed.push_back(f.stop_tokens().front());
            const auto a = f.compose({base[0], {Role::Assistant, f.encode_content("Yo")}, {Role::User, {'x'}}});
            const auto b = f.compose({base[0], {Role::Assistant, closed}, {Role::User, {'x'}}});
            QCOMPARE(b, a);
        }
    }

    // compose(msgs + reply + next) starts with compose(msgs) + reply, and with
    // follow_up_prefix(compose(msgs), reply) followed by the next user message, turn after turn.
    void prefixInvariant_data() {
        QTest::addColumn<ChatTemplateKind>("kind");
        QTest::addColumn<bool>("with_system");
        QTest::addColumn<int>("ending");  // 0: never end-of-turn, 1: always, 2: alternate
        for (ChatTemplateKind kind : kAllKinds)
            for (bool sys : {false, true})
                for (int ending : {0, 1, 2}) {
                    const std::string name = std::string(arbor::chat_template_name(kind)) + (sys ? " sys" : "") +
                                             " ending " + std::to_string(ending);
                    QTest::newRow(name.c_str()) << kind << sys << ending;
                }
    }

    void prefixInvariant() {
        QFETCH(ChatTemplateKind, kind);
        QFETCH(bool, with_system);
        QFETCH(int, ending);
        const ByteTokenizer tok = tokenizer_for(kind);
        const ChatFormatter f(tok, kind);
        const std::vector<TokenId> stops = f.stop_tokens();
        QVERIFY(!stops.empty());
        std::vector<ChatMessage> msgs;
        if (with_system) msgs.push_back({Role::System, f.encode_content("You are terse.")});
        msgs.push_back({Role::User, f.encode_content("What is 2+2?")});
        const char* replies[] = {"4.", " It is four", "Sure:\n- one\n- two", "", "<|im_end|> typed by the model"};
        for (int turn = 0; turn < 5; ++turn) {
            const std::vector<TokenId> prompt = f.compose(msgs);
            std::vector<TokenId> reply = f.encode_content(replies[turn]);
            const bool closed = ending == 1 || (ending == 2 && turn % 2 == 0);
            if (closed) reply.push_back(stops[size_t(turn) % stops.size()]);
            msgs.push_back({Role::Assistant, reply});
            const auto user = f.encode_content("and then " + std::to_string(turn));
            msgs.push_back({Role::User, user});
            const std::vector<TokenId> next = f.compose(msgs);
            // The follow-up prefix is what the next prompt holds right up to the user's words.
            const std::vector<TokenId> follow_up = f.follow_up_prefix(prompt, reply);
            QVERIFY2(starts_with(next, concat(follow_up, user)),
                     qPrintable(QString("turn %1 follow-up prefix:\n%2\n---\n%3")
                                    .arg(turn)
                                    .arg(QString::fromStdString(tok.render(follow_up)))
                                    .arg(QString::fromStdString(tok.render(next)))));
            QVERIFY(follow_up.size() > prompt.size() + reply.size());
            QVERIFY2(starts_with(next, concat(prompt, reply)),
                     qPrintable(QString("turn %1:\n%2\n---\n%3")
                                    .arg(turn)
                                    .arg(QString::fromStdString(tok.render(concat(prompt, reply))))
                                    .arg(QString::fromStdString(tok.render(next)))));
            QVERIFY(next.size() > prompt.size() + reply.size());
        }
    }
};

QTEST_APPLESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"
