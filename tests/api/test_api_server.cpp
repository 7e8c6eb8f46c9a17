// The OpenAI-compatible endpoints on the default model: response shapes, streamed
// events, usage figures against the Engine's own run of the same prompt, and every
// kind of bad input answered with OpenAI's error body while the server keeps serving.
#include "api_test_fixture.h"

#include <ctime>

using arbor::api::Json;
using arbor::test::chat_body;
using arbor::test::message;

namespace {

Json messages(std::initializer_list<Json> list) {
    Json a = Json::array();
    for (const auto& m : list) a.push_back(m);
    return a;
}

arbor::GenerateOptions greedy(int max_tokens) {
    arbor::GenerateOptions o;
    o.sampler.temperature = 0.0f;
    o.max_tokens = max_tokens;
    return o;
}

int64_t num(const Json& j, const char* key) {
    const Json* v = j.find(key);
    return v && v->as_integer() ? *v->as_integer() : -1;
}

std::string str(const Json& j, const char* key) {
    const Json* v = j.find(key);
    return v && v->is_string() ? v->as_string() : std::string("<missing>");
}

} // namespace

class TestApiServer : public QObject {
    Q_OBJECT
    arbor::test::ApiFixture f_;

    // Checks OpenAI's usage object and returns it.
    static Json check_usage(const Json& body) {
        const Json* u = body.find("usage");
        if (!u || !u->is_object()) return Json();
        const int64_t p = num(*u, "prompt_tokens"), c = num(*u, "completion_tokens");
        if (p < 0 || c < 0 || num(*u, "total_tokens") != p + c) return Json();
        const Json* d = u->find("prompt_tokens_details");
        if (!d || num(*d, "cached_tokens") < 0 || num(*d, "cached_tokens") > p) return Json();
        return *u;
    }

    // The error body's four fields; returns its code (or "<null>").
    static std::string error_code(const arbor::test::JsonReply& r) {
        const Json* e = r.body.find("error");
        if (!e || !e->is_object()) return "<no error object: " + r.raw + ">";
        for (const char* k : {"message", "type", "param", "code"})
            if (!e->find(k)) return std::string("<missing ") + k + ">";
        if (!e->find("message")->is_string() || e->find("message")->as_string().empty()) return "<empty message>";
        if (str(*e, "type") != "invalid_request_error" && str(*e, "type") != "server_error") return "<bad type>";
        return e->find("code")->is_null() ? "<null>" : e->find("code")->as_string();
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        f_.start();
    }
    void cleanupTestCase() { f_.stop(); }

    void healthAndModels() {
        auto h = f_.get("/health");
        QCOMPARE(h.status, 200);
        QCOMPARE(str(h.body, "status"), std::string("ok"));
        QCOMPARE(f_.model_id, std::string("SmolLM2-135M-Instruct.Q4_1"));
        auto m = f_.get("/v1/models");
        QCOMPARE(m.status, 200);
        QCOMPARE(str(m.body, "object"), std::string("list"));
        const auto& data = m.body.find("data")->as_array();
        QCOMPARE(data.size(), size_t(1));
        QCOMPARE(str(data[0], "id"), f_.model_id);
        QCOMPARE(str(data[0], "object"), std::string("model"));
        auto one = f_.get("/v1/models/" + f_.model_id);
        QCOMPARE(one.status, 200);
        QCOMPARE(str(one.body, "id"), f_.model_id);
        auto none = f_.get("/v1/models/gpt-4");
        QCOMPARE(none.status, 404);
        QCOMPARE(error_code(none), std::string("model_not_found"));
    }

    void chatCompletion() {
        auto body = chat_body(f_.model_id, messages({message("system", "You are terse."), message("user", "Name a color.")}), 24);
        const auto r = f_.post("/v1/chat/completions", body);
        QCOMPARE(r.status, 200);
        QCOMPARE(r.http.header("content-type"), std::string("application/json"));
        QVERIFY(str(r.body, "id").rfind("chatcmpl-", 0) == 0);
        QCOMPARE(str(r.body, "object"), std::string("chat.completion"));
        QCOMPARE(str(r.body, "model"), f_.model_id);
        QVERIFY(std::abs(num(r.body, "created") - int64_t(std::time(nullptr))) < 120);
        const auto& choices = r.body.find("choices")->as_array();
        QCOMPARE(choices.size(), size_t(1));
        QCOMPARE(num(choices[0], "index"), int64_t(0));
        const Json& msg = *choices[0].find("message");
        QCOMPARE(str(msg, "role"), std::string("assistant"));
        // The Engine's own greedy run of the same prompt.
        const auto prompt = f_.chat_prompt({{arbor::Role::System, "You are terse."}, {arbor::Role::User, "Name a color."}});
        const auto direct = f_.run_direct(prompt, greedy(24));
        QVERIFY(!direct.text.empty());
        QCOMPARE(str(msg, "content"), direct.text);
        QVERIFY(msg.find("reasoning_content") == nullptr);  // a reply without reasoning markup
        QCOMPARE(str(choices[0], "finish_reason"), std::string(direct.finish == arbor::FinishReason::Length ? "length" : "stop"));
        const Json usage = check_usage(r.body);
        QVERIFY2(usage.is_object(), r.raw.c_str());
        QCOMPARE(num(usage, "prompt_tokens"), int64_t(prompt.size()));
        QCOMPARE(num(usage, "completion_tokens"), int64_t(direct.tokens.size()));
    }

    void chatCompletionStreamed() {
        auto body = chat_body(f_.model_id, messages({message("user", "Write one sentence about the sea.")}), 32);
        const auto plain = f_.post("/v1/chat/completions", body);
        QCOMPARE(plain.status, 200);
        const std::string want = str(*plain.body.find("choices")->as_array()[0].find("message"), "content");
        QVERIFY(!want.empty());
        for (bool include_usage : {true, false}) {
            body.set("stream", true);
            if (include_usage) {
                Json so = Json::object();
                so.set("include_usage", true);
                body.set("stream_options", so);
            } else {
                body.set("stream_options", Json());
            }
            int status = 0;
            const auto events = f_.stream("/v1/chat/completions", body, &status);
            QCOMPARE(status, 200);
            QVERIFY(events.size() >= 3);
            QCOMPARE(events.back(), std::string("[DONE]"));
            std::string text, id, finish;
            bool saw_usage = false;
            for (size_t i = 0; i + 1 < events.size(); ++i) {
                const Json chunk = Json::parse(events[i]);
                QCOMPARE(str(chunk, "object"), std::string("chat.completion.chunk"));
                QCOMPARE(str(chunk, "model"), f_.model_id);
                if (i == 0) id = str(chunk, "id");
                QCOMPARE(str(chunk, "id"), id);
                const auto& choices = chunk.find("choices")->as_array();
                if (choices.empty()) {  // the usage chunk comes last
                    QVERIFY(include_usage);
                    QCOMPARE(i, events.size() - 2);
                    const Json usage = check_usage(chunk);
                    QVERIFY(usage.is_object());
                    QCOMPARE(num(usage, "completion_tokens"), num(*plain.body.find("usage"), "completion_tokens"));
                    QCOMPARE(num(usage, "prompt_tokens"), num(*plain.body.find("usage"), "prompt_tokens"));
                    saw_usage = true;
                    continue;
                }
                QCOMPARE(include_usage, chunk.find("usage") != nullptr);
                QVERIFY(finish.empty());  // nothing after the finishing chunk but usage
                const Json& delta = *choices[0].find("delta");
                if (i == 0) QCOMPARE(str(delta, "role"), std::string("assistant"));
                else QVERIFY(delta.find("role") == nullptr);
                if (const Json* c = delta.find("content")) text += c->as_string();
                QVERIFY(delta.find("reasoning_content") == nullptr);
                const Json& fr = *choices[0].find("finish_reason");
                if (!fr.is_null()) {
                    finish = fr.as_string();
                    QVERIFY(delta.as_object().empty());
                }
            }
            QCOMPARE(saw_usage, include_usage);
            QCOMPARE(text, want);
            QCOMPARE(finish, str(plain.body.find("choices")->as_array()[0], "finish_reason"));
        }
    }

    void maxTokensAndStop() {
        auto body = chat_body(f_.model_id, messages({message("user", "Tell me about the moon.")}), 5);
        auto r = f_.post("/v1/chat/completions", body);
        QCOMPARE(r.status, 200);
        QCOMPARE(str(r.body.find("choices")->as_array()[0], "finish_reason"), std::string("length"));
        QCOMPARE(num(*r.body.find("usage"), "completion_tokens"), int64_t(5));
        // max_completion_tokens wins over max_tokens.
        body.set("max_completion_tokens", 3);
        r = f_.post("/v1/chat/completions", body);
        QCOMPARE(num(*r.body.find("usage"), "completion_tokens"), int64_t(3));

        body = chat_body(f_.model_id, messages({message("user", "Tell me about the moon.")}), 40);
        r = f_.post("/v1/chat/completions", body);
        const std::string full = str(*r.body.find("choices")->as_array()[0].find("message"), "content");
        QVERIFY(full.size() > 20);
        const std::string stop = full.substr(full.size() / 2, 3);
        const std::string before = full.substr(0, full.find(stop));
        for (Json s : {Json(stop), Json(Json::Array{Json("\x01never"), Json(stop)})}) {
            body.set("stop", s);
            r = f_.post("/v1/chat/completions", body);
            QCOMPARE(r.status, 200);
            const auto& c = r.body.find("choices")->as_array()[0];
            QCOMPARE(str(*c.find("message"), "content"), before);
            QCOMPARE(str(c, "finish_reason"), std::string("stop"));
        }
    }

    void seedMakesSamplingReproducible() {
        auto body = chat_body(f_.model_id, messages({message("user", "Invent a name for a cat.")}), 16);
        body.set("temperature", 1.2);
        body.set("top_p", 0.95);
        body.set("seed", 1234);
        const auto a = f_.post("/v1/chat/completions", body);
        const auto b = f_.post("/v1/chat/completions", body);
        QCOMPARE(a.status, 200);
        QCOMPARE(str(*a.body.find("choices")->as_array()[0].find("message"), "content"),
                 str(*b.body.find("choices")->as_array()[0].find("message"), "content"));
    }

    void completions() {
        const std::vector<std::string> prompts = {"The capital of France is", "def add(a, b):\n"};
        std::vector<arbor::test::DirectRun> direct;
        const auto& tok = f_.model->tokenizer();
        for (const auto& p : prompts) direct.push_back(f_.run_direct(tok.encode(p, tok.adds_bos(), true), greedy(12)));
        Json body = Json::object();
        body.set("model", f_.model_id);
        body.set("prompt", prompts[0]);
        body.set("max_tokens", 12);
        body.set("temperature", 0);
        auto r = f_.post("/v1/completions", body);
        QCOMPARE(r.status, 200);
        QVERIFY(str(r.body, "id").rfind("cmpl-", 0) == 0);
        QCOMPARE(str(r.body, "object"), std::string("text_completion"));
        QCOMPARE(str(r.body.find("choices")->as_array()[0], "text"), direct[0].text);
        QCOMPARE(num(*r.body.find("usage"), "completion_tokens"), int64_t(direct[0].tokens.size()));

        body.set("prompt", Json(Json::Array{Json(prompts[0]), Json(prompts[1])}));
        r = f_.post("/v1/completions", body);
        QCOMPARE(r.status, 200);
        const auto& choices = r.body.find("choices")->as_array();
        QCOMPARE(choices.size(), size_t(2));
        for (size_t i = 0; i < 2; ++i) {
            QCOMPARE(num(choices[i], "index"), int64_t(i));
            QCOMPARE(str(choices[i], "text"), direct[i].text);
        }
        const Json usage = check_usage(r.body);
        QCOMPARE(num(usage, "completion_tokens"), int64_t(direct[0].tokens.size() + direct[1].tokens.size()));
        QCOMPARE(num(usage, "prompt_tokens"), int64_t(direct[0].stats.prompt_tokens + direct[1].stats.prompt_tokens));

        // Streamed: chunks of both prompts, told apart by index.
        body.set("stream", true);
        const auto events = f_.stream("/v1/completions", body);
        QCOMPARE(events.back(), std::string("[DONE]"));
        std::string text[2], finish[2];
        for (size_t i = 0; i + 1 < events.size(); ++i) {
            const Json chunk = Json::parse(events[i]);
            QCOMPARE(str(chunk, "object"), std::string("text_completion"));
            const auto& c = chunk.find("choices")->as_array();
            QCOMPARE(c.size(), size_t(1));
            const int64_t index = num(c[0], "index");
            QVERIFY(index == 0 || index == 1);
            QVERIFY(finish[index].empty());
            text[index] += str(c[0], "text");
            if (!c[0].find("finish_reason")->is_null()) finish[index] = c[0].find("finish_reason")->as_string();
        }
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(text[i], direct[size_t(i)].text);
            QVERIFY(!finish[i].empty());
        }

        // Token ids as the prompt.
        Json ids = Json::array();
        for (auto t : tok.encode(prompts[0], tok.adds_bos(), true)) ids.push_back(Json(int64_t(t)));
        body.set("stream", false);
        body.set("prompt", ids);
        r = f_.post("/v1/completions", body);
        QCOMPARE(r.status, 200);
        QCOMPARE(str(r.body.find("choices")->as_array()[0], "text"), direct[0].text);
    }

    void badInputIsRefused_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("code");
        const QString chat = "/v1/chat/completions", cmpl = "/v1/completions";
        const QByteArray m = "\"model\":\"SmolLM2-135M-Instruct.Q4_1\"";
        const QByteArray msgs = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
        auto with = [&](const QByteArray& extra) { return "{" + m + "," + msgs + "," + extra + "}"; };
        QTest::newRow("malformed json") << chat << QByteArray("{\"model\": ") << 400 << "invalid_json";
        QTest::newRow("trailing comma") << chat << QByteArray("{" + m + "," + msgs + ",}") << 400 << "invalid_json";
        QTest::newRow("not an object") << chat << QByteArray("[1,2]") << 400 << "<null>";
        QTest::newRow("empty body") << chat << QByteArray("") << 400 << "invalid_json";
        QTest::newRow("no messages") << chat << QByteArray("{" + m + "}") << 400 << "missing_required_parameter";
        QTest::newRow("no model") << chat << QByteArray("{" + msgs + "}") << 400 << "missing_required_parameter";
        QTest::newRow("model not string") << chat << QByteArray("{\"model\":7," + msgs + "}") << 400 << "invalid_value";
        QTest::newRow("unknown model") << chat << QByteArray("{\"model\":\"gpt-4o\"," + msgs + "}") << 404 << "model_not_found";
        QTest::newRow("messages string") << chat << QByteArray("{" + m + ",\"messages\":\"hi\"}") << 400 << "invalid_value";
        QTest::newRow("messages empty") << chat << QByteArray("{" + m + ",\"messages\":[]}") << 400 << "invalid_value";
        QTest::newRow("bad role") << chat << QByteArray("{" + m + ",\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]}") << 400 << "invalid_value";
        QTest::newRow("no content") << chat << QByteArray("{" + m + ",\"messages\":[{\"role\":\"user\"}]}") << 400 << "missing_required_parameter";
        QTest::newRow("content number") << chat << QByteArray("{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":5}]}") << 400 << "invalid_value";
        QTest::newRow("image part") << chat << QByteArray("{" + m + ",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}") << 400 << "invalid_value";
        QTest::newRow("temperature string") << chat << with("\"temperature\":\"hot\"") << 400 << "invalid_value";
        QTest::newRow("temperature high") << chat << with("\"temperature\":5") << 400 << "invalid_value";
        QTest::newRow("top_p zero") << chat << with("\"top_p\":0") << 400 << "invalid_value";
        QTest::newRow("max_tokens zero") << chat << with("\"max_tokens\":0") << 400 << "invalid_value";
        QTest::newRow("max_tokens fraction") << chat << with("\"max_tokens\":1.5") << 400 << "invalid_value";
        QTest::newRow("stop number") << chat << with("\"stop\":5") << 400 << "invalid_value";
        QTest::newRow("stop five") << chat << with("\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]") << 400 << "invalid_value";
        QTest::newRow("seed string") << chat << with("\"seed\":\"1\"") << 400 << "invalid_value";
        QTest::newRow("n two") << chat << with("\"n\":2") << 400 << "unsupported_value";
        QTest::newRow("stream string") << chat << with("\"stream\":\"yes\"") << 400 << "invalid_value";
        QTest::newRow("stream_options alone") << chat << with("\"stream_options\":{\"include_usage\":true}") << 400 << "invalid_value";
        QTest::newRow("logprobs") << chat << with("\"logprobs\":true") << 400 << "unsupported_parameter";
        const QByteArray tool = "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}";
        QTest::newRow("tools object") << chat << with("\"tools\":" + tool) << 400 << "invalid_value";
        QTest::newRow("tool without name") << chat << with("\"tools\":[{\"type\":\"function\",\"function\":{}}]") << 400
                                           << "invalid_value";
        QTest::newRow("tool_choice required") << chat << with("\"tools\":[" + tool + "],\"tool_choice\":\"required\"")
                                              << 400 << "unsupported_value";
        // SmolLM2's template does not show tools (test_api_tools covers one that does).
        QTest::newRow("tools the template ignores") << chat << with("\"tools\":[" + tool + "]") << 400
                                                    << "unsupported_parameter";
        QTest::newRow("prompt missing") << cmpl << QByteArray("{" + m + "}") << 400 << "missing_required_parameter";
        QTest::newRow("prompt number") << cmpl << QByteArray("{" + m + ",\"prompt\":5}") << 400 << "invalid_value";
        QTest::newRow("prompt empty list") << cmpl << QByteArray("{" + m + ",\"prompt\":[]}") << 400 << "invalid_value";
        QTest::newRow("prompt bad id") << cmpl << QByteArray("{" + m + ",\"prompt\":[1,99999999]}") << 400 << "invalid_value";
        QTest::newRow("prompt mixed") << cmpl << QByteArray("{" + m + ",\"prompt\":[\"a\",5]}") << 400 << "invalid_value";
        QTest::newRow("completion n") << cmpl << QByteArray("{" + m + ",\"prompt\":\"a\",\"n\":3}") << 400 << "unsupported_value";
    }

    void badInputIsRefused() {
        QFETCH(QString, path);
        QFETCH(QByteArray, body);
        QFETCH(int, status);
        QFETCH(QString, code);
        const auto r = f_.post_raw(path.toStdString(), body.toStdString());
        QCOMPARE(r.status, status);
        QCOMPARE(error_code(r), code.toStdString());
        // Everyone else is still served.
        QCOMPARE(f_.get("/health").status, 200);
    }

    void promptLongerThanTheContext() {
        std::string long_text;
        for (int i = 0; i < 1500; ++i) long_text += "lorem ipsum dolor ";
        const auto r = f_.post("/v1/chat/completions", chat_body(f_.model_id, messages({message("user", long_text)}), 4));
        QCOMPARE(r.status, 400);
        QCOMPARE(error_code(r), std::string("context_length_exceeded"));
        QCOMPARE(str(*r.body.find("error"), "param"), std::string("messages"));
        Json body = Json::object();
        body.set("model", f_.model_id);
        body.set("prompt", long_text);
        const auto c = f_.post("/v1/completions", body);
        QCOMPARE(c.status, 400);
        QCOMPARE(error_code(c), std::string("context_length_exceeded"));
        QCOMPARE(str(*c.body.find("error"), "param"), std::string("prompt"));
    }

    void routesAndMethods() {
        auto r = f_.get("/v1/nothing");
        QCOMPARE(r.status, 404);
        QCOMPARE(error_code(r), std::string("unknown_url"));
        r = f_.get("/v1/chat/completions");
        QCOMPARE(r.status, 405);
        QCOMPARE(error_code(r), std::string("method_not_allowed"));
        QCOMPARE(r.http.header("allow"), std::string("POST, OPTIONS"));
        r = f_.post_raw("/v1/models", "{}");
        QCOMPARE(r.status, 405);
        auto del = arbor::test::http_request(f_.port(), "DELETE", "/health");
        QVERIFY(del);
        QCOMPARE(del->status, 405);
    }

    void bodyOverTheLimit() {
        // The head alone announces too much: refused before any of it is read.
        arbor::test::HttpTestClient c(f_.port());
        QVERIFY(c.send_raw("POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: " + std::to_string((4u << 20) + 1) + "\r\n\r\n{"));
        auto r = c.read_response();
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        const Json body = Json::parse(r->body);
        QCOMPARE(str(*body.find("error"), "code"), std::string("request_too_large"));
        // Exactly at the limit is read (and then judged on its content).
        const std::string head = "{\"model\":\"x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"pad\":\"";
        std::string big = head + std::string((4u << 20) - head.size() - 2, 'a') + "\"}";
        QCOMPARE(big.size(), size_t(4u << 20));
        const auto ok = f_.post_raw("/v1/chat/completions", big);
        QCOMPARE(ok.status, 404);  // parsed: the model 'x' does not exist
        QCOMPARE(f_.get("/health").status, 200);
    }
};

QTEST_GUILESS_MAIN(TestApiServer)
#include "test_api_server.moc"
