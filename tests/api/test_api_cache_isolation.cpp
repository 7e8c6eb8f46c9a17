// The prefix-cache side channel, probed as an attacker would over loopback: guess ever
// longer prefixes of someone else's prompt and read usage.prompt_tokens_details.
// cached_tokens. Across cache namespaces (the app's conversations, each API key, each
// bearer token, keyless clients, each cache_salt) the figures an attacker reads must be
// exactly those it reads when the victim never sent anything; inside one namespace the
// cache is still shared, and the same probe does see the victim's prompt.
#include "api_test_fixture.h"

#include <optional>

using arbor::api::Json;
using arbor::test::chat_body;
using arbor::test::message;

namespace {

const std::string kSecret =
    "Note to self: the vault code is 7719-4921 and the spare key hides under the blue flowerpot by the door.";
// What an attacker tries, from a weak guess to the whole prompt.
const std::vector<std::string> kGuesses = {
    "Note to self: the",
    "Note to self: the vault code is 7719",
    "Note to self: the vault code is 7719-4921 and the spare key",
    kSecret,
};

struct Client {
    uint16_t port = 0;
    std::vector<std::string> headers;  // e.g. Authorization
    std::optional<std::string> salt;   // cache_salt
};

std::optional<Json> post_json(const Client& c, const std::string& path, Json body) {
    if (c.salt) body.set("cache_salt", *c.salt);
    auto headers = c.headers;
    headers.push_back("Content-Type: application/json");
    const auto r = arbor::test::http_request(c.port, "POST", path, body.dump(), headers);
    if (!r || r->status != 200) return std::nullopt;
    try {
        return Json::parse(r->body);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

int64_t cached_tokens(const Json& reply) {
    const Json* u = reply.find("usage");
    const Json* d = u ? u->find("prompt_tokens_details") : nullptr;
    const Json* c = d ? d->find("cached_tokens") : nullptr;
    return c && c->as_integer() ? *c->as_integer() : -1;
}

} // namespace

class TestApiCacheIsolation : public QObject {
    Q_OBJECT
    arbor::test::ApiFixture f_;
    std::unique_ptr<arbor::api::ApiServer> keyed_, shared_;

    Json completion(const std::string& prompt) const {
        Json b = Json::object();
        b.set("model", f_.model_id);
        b.set("prompt", prompt);
        b.set("max_tokens", 1);
        b.set("temperature", 0);
        return b;
    }

    // Empties the prefix cache of every namespace (carried out by the engine loop).
    bool clear_cache() {
        f_.engine->clear_cache();
        for (int i = 0; i < 200; ++i) {
            if (f_.engine->stats().pages_cached == 0) return true;
            QTest::qWait(10);
        }
        return false;
    }

    // cached_tokens for each guess in turn; an empty list when a request failed.
    std::vector<int64_t> probe(const Client& attacker) {
        std::vector<int64_t> seen;
        for (const auto& guess : kGuesses) {
            const auto reply = post_json(attacker, "/v1/completions", completion(guess));
            if (!reply) return {};
            seen.push_back(cached_tokens(*reply));
        }
        return seen;
    }

    // What the attacker reads after the victim's turn, and what it reads with no victim.
    std::pair<std::vector<int64_t>, std::vector<int64_t>> probe_with_and_without(
        const std::function<bool()>& victim, const Client& attacker) {
        if (!clear_cache() || !victim()) return {};
        auto with = probe(attacker);
        if (!clear_cache()) return {};
        return {with, probe(attacker)};
    }

    std::function<bool()> api_victim(const Client& victim) {
        return [this, victim] { return post_json(victim, "/v1/completions", completion(kSecret)).has_value(); };
    }

    // The app's conversations submit straight to the engine, in namespace 0.
    std::function<bool()> app_victim() {
        return [this] {
            const auto& tok = f_.model->tokenizer();
            arbor::GenerateOptions o;
            o.sampler.temperature = 0.0f;
            o.max_tokens = 1;
            return f_.run_direct(tok.encode(kSecret, tok.adds_bos(), true), o).finish != arbor::FinishReason::Error;
        };
    }

    static QString describe(const std::vector<int64_t>& v) {
        QStringList parts;
        for (int64_t x : v) parts << QString::number(x);
        return "[" + parts.join(", ") + "]";
    }

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        f_.start(8192);
        arbor::api::ApiServerOptions o;
        o.port = 0;
        o.api_key = "key-of-the-team";
        keyed_ = std::make_unique<arbor::api::ApiServer>(*f_.engine, *f_.model, o);
        keyed_->start();
        o.api_key.clear();
        o.share_app_cache = true;
        shared_ = std::make_unique<arbor::api::ApiServer>(*f_.engine, *f_.model, o);
        shared_->start();
    }
    void cleanupTestCase() {
        shared_.reset();
        keyed_.reset();
        f_.stop();
    }

    void probesLearnOnlyFromTheirOwnNamespace_data() {
        QTest::addColumn<QString>("victim");
        QTest::addColumn<QString>("attacker");
        QTest::addColumn<bool>("shared");
        QTest::newRow("app vs keyless client") << "app" << "keyless" << false;
        QTest::newRow("app vs keyed client") << "app" << "keyed" << false;
        QTest::newRow("app vs client with a token") << "app" << "mallory" << false;
        QTest::newRow("keyed client vs keyless client") << "keyed" << "keyless" << false;
        QTest::newRow("token vs another token") << "alice" << "mallory" << false;
        QTest::newRow("token vs keyless client") << "alice" << "keyless" << false;
        QTest::newRow("keyless vs the same with a salt") << "keyless" << "keyless+salt" << false;
        QTest::newRow("salt vs no salt") << "keyless+salt" << "keyless" << false;
        QTest::newRow("salt vs another salt") << "keyless+salt" << "keyless+other salt" << false;
        QTest::newRow("salted sharing server vs the app") << "app" << "sharing+salt" << false;
        // Sharing inside a namespace is kept, and it is what the probe detects.
        QTest::newRow("keyless clients") << "keyless" << "keyless" << true;
        QTest::newRow("one key") << "keyed" << "keyed" << true;
        QTest::newRow("one token") << "alice" << "alice" << true;
        QTest::newRow("one salt") << "keyless+salt" << "keyless+salt" << true;
        QTest::newRow("the app and a sharing server") << "app" << "sharing" << true;
    }
    void probesLearnOnlyFromTheirOwnNamespace() {
        QFETCH(QString, victim);
        QFETCH(QString, attacker);
        QFETCH(bool, shared);
        const auto [with, without] = probe_with_and_without(who(victim), client(attacker));
        QVERIFY2(!with.empty() && !without.empty(), "a request failed");
        const QString seen = QString("the attacker reads %1 after the victim's request and %2 without it")
                                 .arg(describe(with), describe(without));
        if (!shared) QVERIFY2(with == without, qPrintable(seen));
        // Shared: even the weakest guess hits, the whole prompt but its last token more so.
        else QVERIFY2(with.back() > without.back() && with.front() > 0, qPrintable(seen));
    }

    // A whole chat of the app's, sent back through the chat endpoint, is not served from
    // the app's cache (its template prefix included).
    void chatOfTheAppIsNotCachedForClients() {
        QVERIFY(clear_cache());
        const std::vector<std::pair<arbor::Role, std::string>> chat = {{arbor::Role::User, kSecret}};
        arbor::GenerateOptions o;
        o.sampler.temperature = 0.0f;
        o.max_tokens = 1;
        QVERIFY(f_.run_direct(f_.chat_prompt(chat), o).finish != arbor::FinishReason::Error);
        Json messages = Json::array();
        messages.push_back(message("user", kSecret));
        const Json body = chat_body(f_.model_id, messages, 1);
        const auto plain = post_json(client("keyless"), "/v1/chat/completions", body);
        QVERIFY(plain);
        QCOMPARE(cached_tokens(*plain), int64_t(0));
        const auto sharing = post_json(client("sharing"), "/v1/chat/completions", body);
        QVERIFY(sharing);
        QVERIFY2(cached_tokens(*sharing) > 0, qPrintable(QString::number(cached_tokens(*sharing))));
    }

    void badCacheSalts() {
        for (Json salt : {Json(""), Json(7), Json::array(), Json::object()}) {
            Json body = completion("hi");
            body.set("cache_salt", salt);
            const auto r = f_.post("/v1/completions", body);
            QCOMPARE(r.status, 400);
            QCOMPARE(r.body.find("error")->find("param")->as_string(), std::string("cache_salt"));
        }
        Json body = completion("hi");
        body.set("cache_salt", Json());  // null: as if absent
        QCOMPARE(f_.post("/v1/completions", body).status, 200);
    }

private:
    Client client(const QString& name) const {
        Client c;
        c.port = f_.port();
        if (name.startsWith("keyed")) {
            c.port = keyed_->port();
            c.headers = {"Authorization: Bearer key-of-the-team"};
        } else if (name.startsWith("sharing")) {
            c.port = shared_->port();
        } else if (name == "alice" || name == "mallory") {
            c.headers = {"Authorization: Bearer " + name.toStdString()};
        }
        if (name.endsWith("+salt")) c.salt = "per-user salt 1";
        if (name.endsWith("+other salt")) c.salt = "per-user salt 2";
        return c;
    }

    std::function<bool()> who(const QString& name) { return name == "app" ? app_victim() : api_victim(client(name)); }
};

QTEST_GUILESS_MAIN(TestApiCacheIsolation)
#include "test_api_cache_isolation.moc"
