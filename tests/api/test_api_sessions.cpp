// The API as clients live with it: many streams at once, clients that leave mid-reply,
// conversations sent back as text that must still hit the prefix cache, API keys and
// CORS.
#include "api_test_fixture.h"

#include <atomic>
#include <thread>

using arbor::api::Json;
using arbor::test::chat_body;
using arbor::test::message;

namespace {

Json one(const Json& m) {
    Json a = Json::array();
    a.push_back(m);
    return a;
}

std::string content_of(const Json& completion) {
    return completion.find("choices")->as_array()[0].find("message")->find("content")->as_string();
}

int64_t usage(const Json& body, const char* key) {
    const Json& u = *body.find("usage");
    if (std::string(key) == "cached_tokens") return *u.find("prompt_tokens_details")->find("cached_tokens")->as_integer();
    return *u.find(key)->as_integer();
}

// The text of a streamed chat reply, or a description of what was wrong with the stream.
std::string streamed_text(const std::vector<std::string>& events) {
    if (events.empty() || events.back() != "[DONE]") return "<incomplete stream>";
    std::string text;
    bool finished = false;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        Json chunk;
        try {
            chunk = Json::parse(events[i]);
        } catch (const std::exception& e) {
            return std::string("<bad chunk: ") + e.what() + ">";
        }
        const auto& c = chunk.find("choices")->as_array();
        if (c.empty()) continue;
        if (finished) return "<chunk after the finish>";
        if (const Json* piece = c[0].find("delta")->find("content")) text += piece->as_string();
        finished = !c[0].find("finish_reason")->is_null();
    }
    return finished ? text : "<no finish reason>";
}

} // namespace

class TestApiSessions : public QObject {
    Q_OBJECT
    arbor::test::ApiFixture f_;

    bool wait_until_idle(std::chrono::milliseconds limit) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < until) {
            const auto s = f_.engine->stats();
            if (s.running == 0 && s.waiting == 0) return true;
            QTest::qWait(20);
        }
        return false;
    }

    bool pages_released() {
        f_.engine->clear_cache();
        for (int i = 0; i < 200; ++i) {
            if (f_.engine->stats().pages_used == 0) return true;
            QTest::qWait(10);
        }
        return false;
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        f_.start(8192);
    }
    void cleanupTestCase() { f_.stop(); }

    void sixteenConcurrentStreams() {
        const char* topics[] = {"the sea", "a cat", "the moon", "bread", "winter", "a train", "music", "trees"};
        std::vector<Json> bodies;
        std::vector<std::string> alone;
        for (int i = 0; i < 16; ++i) {
            Json b = chat_body(f_.model_id, one(message("user", std::string("Say something about ") + topics[i % 8] + ".")), 24 + i);
            bodies.push_back(b);
            const auto r = f_.post("/v1/chat/completions", b);
            QCOMPARE(r.status, 200);
            alone.push_back(content_of(r.body));
        }
        f_.engine->clear_cache();  // the concurrent run computes everything again, batched
        std::vector<std::string> got(16);
        std::vector<std::thread> clients;
        for (int i = 0; i < 16; ++i) {
            clients.emplace_back([&, i] {
                Json b = bodies[size_t(i)];
                b.set("stream", true);
                got[size_t(i)] = streamed_text(f_.stream("/v1/chat/completions", b));
            });
        }
        for (auto& t : clients) t.join();
        for (int i = 0; i < 16; ++i) QCOMPARE(got[size_t(i)], alone[size_t(i)]);
        QVERIFY(wait_until_idle(std::chrono::seconds(5)));
    }

    void disconnectMidStreamCancels() {
        // Counting goes on as long as it is allowed to: the request would run for long.
        Json body = Json::object();
        body.set("model", f_.model_id);
        body.set("prompt", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,");
        body.set("temperature", 0);
        body.set("max_tokens", 48);
        const auto probe = f_.post("/v1/completions", body);
        QCOMPARE(probe.status, 200);
        QCOMPARE(probe.body.find("choices")->as_array()[0].find("finish_reason")->as_string(), std::string("length"));

        body.set("max_tokens", 4000);
        body.set("stream", true);
        {
            arbor::test::HttpTestClient c(f_.port());
            QVERIFY(c.send_request("POST", "/v1/completions", body.dump(), {"Content-Type: application/json"}));
            auto head = c.read_head();
            QVERIFY(head);
            QCOMPARE(head->status, 200);
            std::string seen;
            while (seen.find("\"text\"") == std::string::npos) {
                const std::string more = c.read_some();
                QVERIFY(!more.empty());
                seen += more;
            }
            // The engine publishes its figures after the step that sent the first token.
            QTRY_VERIFY_WITH_TIMEOUT(f_.engine->stats().running == 1, 2000);
        }  // the client leaves
        QVERIFY2(wait_until_idle(std::chrono::seconds(5)), "the request kept running after its client left");
        QVERIFY(pages_released());
    }

    void disconnectWhileWaitingCancels() {
        // A non-streamed request writes nothing until the end; leaving must still cancel it.
        Json body = Json::object();
        body.set("model", f_.model_id);
        body.set("prompt", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,");
        body.set("temperature", 0);
        body.set("max_tokens", 4000);
        {
            arbor::test::HttpTestClient c(f_.port());
            QVERIFY(c.send_request("POST", "/v1/completions", body.dump(), {"Content-Type: application/json"}));
            QTRY_VERIFY_WITH_TIMEOUT(f_.engine->stats().running == 1, 5000);
        }
        QVERIFY2(wait_until_idle(std::chrono::seconds(5)), "the request kept running after its client left");
        QVERIFY(pages_released());
    }

    void conversationSentBackAsTextHitsTheCache() {
        Json msgs = Json::array();
        msgs.push_back(message("system", "You are a helpful assistant who answers briefly."));
        msgs.push_back(message("user", "Name three rivers in Europe."));
        int64_t previous = 0;
        for (int turn = 0; turn < 3; ++turn) {
            const auto r = f_.post("/v1/chat/completions", chat_body(f_.model_id, msgs, 40));
            QCOMPARE(r.status, 200);
            if (turn > 0)
                QVERIFY2(usage(r.body, "cached_tokens") >= previous - 16,
                         qPrintable(QString("turn %1: cached %2, previous prompt + reply %3")
                                        .arg(turn).arg(usage(r.body, "cached_tokens")).arg(previous)));
            previous = usage(r.body, "prompt_tokens") + usage(r.body, "completion_tokens");
            msgs.push_back(message("assistant", content_of(r.body)));
            msgs.push_back(message("user", turn == 0 ? "Which is longest?" : "Thanks!"));
        }
    }

    void replyThatTokenizesDifferentlyStillHitsTheCache() {
        // Sampled replies often hold token splits that tokenizing their text would not
        // reproduce. Find one that differs early enough that a re-tokenized history
        // would lose more than a page of the cache, then send it back as text.
        const std::string question = "Write a strange word.";
        const auto prompt = f_.chat_prompt({{arbor::Role::User, question}});
        for (int seed = 1; seed <= 60; ++seed) {
            arbor::GenerateOptions o;
            o.sampler.temperature = 1.5f;
            o.sampler.seed = uint64_t(seed);
            o.max_tokens = 64;
            const auto direct = f_.run_direct(prompt, o);
            const auto retokenized = f_.chat->encode_content(direct.text);
            size_t differs = 0;
            while (differs < retokenized.size() && differs < direct.tokens.size() &&
                   retokenized[differs] == direct.tokens[differs])
                ++differs;
            if (differs + 17 >= direct.tokens.size()) continue;

            // The server samples the same ids for the same request.
            Json body = chat_body(f_.model_id, one(message("user", question)), 64);
            body.set("temperature", 1.5);
            body.set("seed", seed);
            const auto first = f_.post("/v1/chat/completions", body);
            QCOMPARE(first.status, 200);
            const std::string reply = content_of(first.body);
            QCOMPARE(reply, direct.text);
            QCOMPARE(usage(first.body, "completion_tokens"), int64_t(direct.tokens.size()));

            Json msgs = one(message("user", question));
            msgs.push_back(message("assistant", reply));
            msgs.push_back(message("user", "Use it in a sentence."));
            const auto second = f_.post("/v1/chat/completions", chat_body(f_.model_id, msgs, 8));
            QCOMPARE(second.status, 200);
            const int64_t previous = usage(first.body, "prompt_tokens") + usage(first.body, "completion_tokens");
            QVERIFY2(usage(second.body, "cached_tokens") >= previous - 16,
                     qPrintable(QString("seed %1: cached %2, previous prompt + reply %3, re-tokenized reply differs at %4")
                                    .arg(seed).arg(usage(second.body, "cached_tokens")).arg(previous).arg(differs)));
            return;
        }
        QFAIL("no sampled reply tokenized differently from its text early enough; choose other seeds");
    }

    void apiKeyAndCors() {
        arbor::api::ApiServerOptions o;
        o.port = 0;
        o.api_key = "sekrit-key";
        o.allowed_origins = {"https://app.example"};
        arbor::api::ApiServer secured(*f_.engine, *f_.model, o);
        secured.start();
        const uint16_t port = secured.port();
        auto get = [&](const std::string& path, std::vector<std::string> headers) {
            return arbor::test::http_request(port, "GET", path, {}, headers);
        };
        auto r = get("/v1/models", {});
        QVERIFY(r);
        QCOMPARE(r->status, 401);
        QCOMPARE(Json::parse(r->body).find("error")->find("code")->as_string(), std::string("invalid_api_key"));
        QCOMPARE(get("/v1/models", {"Authorization: Bearer wrong"})->status, 401);
        QCOMPARE(get("/v1/models", {"Authorization: Bearer sekrit-ke"})->status, 401);
        QCOMPARE(get("/v1/models", {"Authorization: Bearer sekrit-key"})->status, 200);
        QCOMPARE(get("/v1/models", {"Authorization: bearer sekrit-key"})->status, 200);
        QCOMPARE(get("/health", {})->status, 200);
        auto post = arbor::test::http_request(port, "POST", "/v1/chat/completions",
                                              chat_body(f_.model_id, one(message("user", "hi")), 2).dump(), {});
        QCOMPARE(post->status, 401);

        r = get("/v1/models", {"Authorization: Bearer sekrit-key", "Origin: https://app.example"});
        QCOMPARE(r->header("access-control-allow-origin"), std::string("https://app.example"));
        r = get("/v1/models", {"Authorization: Bearer sekrit-key", "Origin: https://evil.example"});
        QCOMPARE(r->status, 200);
        QVERIFY(!r->has("access-control-allow-origin"));
        // Errors carry CORS headers too, so a browser can read them.
        r = get("/v1/models", {"Origin: https://app.example"});
        QCOMPARE(r->status, 401);
        QCOMPARE(r->header("access-control-allow-origin"), std::string("https://app.example"));
        // Preflight needs no key.
        auto pre = arbor::test::http_request(port, "OPTIONS", "/v1/chat/completions", {},
                                             {"Origin: https://app.example", "Access-Control-Request-Method: POST",
                                              "Access-Control-Request-Headers: authorization, content-type"});
        QVERIFY(pre);
        QCOMPARE(pre->status, 204);
        QCOMPARE(pre->header("access-control-allow-origin"), std::string("https://app.example"));
        QVERIFY(pre->header("access-control-allow-methods").find("POST") != std::string::npos);
        QCOMPARE(pre->header("access-control-allow-headers"), std::string("authorization, content-type"));
        pre = arbor::test::http_request(port, "OPTIONS", "/v1/chat/completions", {}, {"Origin: https://evil.example"});
        QCOMPARE(pre->status, 204);
        QVERIFY(!pre->has("access-control-allow-origin"));

        // The default server allows no origin; "*" allows any.
        r = arbor::test::http_request(f_.port(), "GET", "/v1/models", {}, {"Origin: https://app.example"});
        QVERIFY(!r->has("access-control-allow-origin"));
        o.api_key.clear();
        o.allowed_origins = {"*"};
        arbor::api::ApiServer open(*f_.engine, *f_.model, o);
        open.start();
        r = arbor::test::http_request(open.port(), "GET", "/v1/models", {}, {"Origin: https://anything.example"});
        QCOMPARE(r->status, 200);
        QCOMPARE(r->header("access-control-allow-origin"), std::string("*"));
    }

    void stopCancelsWaitingClients() {
        arbor::api::ApiServerOptions o;
        o.port = 0;
        auto server = std::make_unique<arbor::api::ApiServer>(*f_.engine, *f_.model, o);
        server->start();
        Json body = Json::object();
        body.set("model", f_.model_id);
        body.set("prompt", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,");
        body.set("temperature", 0);
        body.set("max_tokens", 4000);
        body.set("stream", true);
        arbor::test::HttpTestClient c(server->port());
        QVERIFY(c.send_request("POST", "/v1/completions", body.dump(), {"Content-Type: application/json"}));
        QVERIFY(c.read_head());
        QTRY_VERIFY_WITH_TIMEOUT(f_.engine->stats().running == 1, 5000);
        const auto t0 = std::chrono::steady_clock::now();
        server.reset();
        QVERIFY(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
        QVERIFY(wait_until_idle(std::chrono::seconds(5)));
        // The stream was told why it ended, then closed.
        const auto rest = c.read_chunked_body();
        QVERIFY2(rest, "the stream was cut off");
        const auto events = arbor::test::sse_payloads(*rest);
        QVERIFY(events.size() >= 2);
        QCOMPARE(events.back(), std::string("[DONE]"));
        const Json error = Json::parse(events[events.size() - 2]);
        QCOMPARE(error.find("error")->find("message")->as_string(), std::string("the server is shutting down"));
    }
};

QTEST_GUILESS_MAIN(TestApiSessions)
#include "test_api_sessions.moc"
