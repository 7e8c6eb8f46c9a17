// The API's JSON: strict parsing (every RFC 8259 rule a lenient parser would bend),
// limits on size and depth, and serialization that always yields valid JSON.
#include "test_support.h"

#include "api/json.h"
#include "api/json_parse_paths.h"

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

using arbor::api::Json;
using arbor::api::JsonError;
using arbor::api::JsonParseLimits;

class TestJson : public QObject {
    Q_OBJECT

    static bool rejects(const std::string& text, const JsonParseLimits& limits = {}) {
        try {
            Json::parse(text, limits);
            return false;
        } catch (const JsonError&) {
            return true;
        }
    }

private slots:
    void parsesEveryType() {
        const Json v = Json::parse(" {\"a\": [1, -2.5, 3e2, true, false, null], \"b\": {\"c\": \"d\"}, \"e\": \"\"} ");
        QVERIFY(v.is_object());
        const auto& a = v.find("a")->as_array();
        QCOMPARE(a.size(), size_t(6));
        QCOMPARE(*a[0].as_integer(), int64_t(1));
        QCOMPARE(a[1].as_double(), -2.5);
        QCOMPARE(a[2].as_double(), 300.0);
        QVERIFY(a[3].as_bool());
        QVERIFY(!a[4].as_bool());
        QVERIFY(a[5].is_null());
        QCOMPARE(v.find("b")->find("c")->as_string(), std::string("d"));
        QCOMPARE(v.find("e")->as_string(), std::string());
        QVERIFY(v.find("missing") == nullptr);
    }

    void keepsLargeIntegersExact() {
        const Json v = Json::parse("[9007199254740993, -9223372036854775808]");
        QCOMPARE(*v.as_array()[0].as_integer(), int64_t(9007199254740993LL));
        QCOMPARE(*v.as_array()[1].as_integer(), INT64_MIN);
        QCOMPARE(v.dump(), std::string("[9007199254740993,-9223372036854775808]"));
        QVERIFY(!Json::parse("1.5").as_integer());
        QCOMPARE(*Json::parse("2.0").as_integer(), int64_t(2));
        QVERIFY(!Json::parse("\"3\"").as_integer());
        QCOMPARE(Json::parse("1e-400").as_double(), 0.0);  // underflow is harmless
        QCOMPARE(Json::parse("-0").as_double(), 0.0);
    }

    void decodesEscapesAndUnicode() {
        const Json v = Json::parse("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u0041\\u00e9\\u4e2d\\ud83d\\ude00\"");
        QCOMPARE(v.as_string(), std::string("a\"b\\c/d\b\f\n\r\tA\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"));
        // A lone surrogate has no UTF-8 form: it becomes U+FFFD.
        QCOMPARE(Json::parse("\"x\\ud800y\"").as_string(), std::string("x\xEF\xBF\xBDy"));
        QCOMPARE(Json::parse("\"\\udc00\\ud83d\"").as_string(), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
        QCOMPARE(Json::parse("\"h\xC3\xA9llo\"").as_string(), std::string("h\xC3\xA9llo"));
    }

    void rejectsMalformedDocuments_data() {
        QTest::addColumn<QByteArray>("text");
        const char* cases[] = {
            "", " ", "{", "}", "[1,]", "[,1]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]",
            "01", "-", "1.", ".5", "1e", "+1", "0x10", "NaN", "Infinity", "-Infinity", "1e999",
            "tru", "nul", "True", "\"abc", "\"a\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"tab\there\"",
            "\"line\nbreak\"", "[1] [2]", "// c\n1", "/* c */ 1", "{\"a\":1,\"a\":2}", "\xEF\xBB\xBF{}",
            "\"\xC3\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xFF\"", "[1]\x01",
        };
        int i = 0;
        for (const char* c : cases) QTest::addRow("case %d", i++) << QByteArray(c);
        QTest::newRow("nul byte") << QByteArray("\"a\0b\"", 5);
    }

    void rejectsMalformedDocuments() {
        QFETCH(QByteArray, text);
        QVERIFY2(rejects(text.toStdString()), text.constData());
    }

    void errorsTellWhere() {
        try {
            Json::parse("{\"a\": [1, 2,, 3]}");
            QFAIL("parsed");
        } catch (const JsonError& e) {
            QCOMPARE(e.offset(), size_t(12));
            QVERIFY(std::string(e.what()).find("byte 12") != std::string::npos);
        }
    }

    // Duplicate keys are found in small objects as each key arrives and in large ones
    // when the object ends; either way the error names the first repeat in document
    // order and where it is.
    void manyKeys() {
        const int n = 300000;
        std::string text = "{";
        for (int i = 0; i < n; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
        const Json v = Json::parse(text + "}");
        QCOMPARE(v.as_object().size(), size_t(n));
        QCOMPARE(v.as_object()[123456].first, std::string("k123456"));
        QCOMPARE(*v.find("k299999")->as_integer(), int64_t(299999));

        // "k9" repeats before "k10" does, though "k10" sorts first.
        const std::string repeated = text + ",\"k9\":0,\"k10\":0}";
        try {
            Json::parse(repeated);
            QFAIL("parsed an object with duplicate keys");
        } catch (const JsonError& e) {
            QVERIFY2(std::string(e.what()).find("duplicate key \"k9\"") != std::string::npos, e.what());
            QCOMPARE(e.offset(), text.size() + 1);
        }
    }

    void duplicateKeysAtEverySize_data() {
        QTest::addColumn<int>("members");  // before the repeated key
        QTest::addColumn<int>("repeats");  // which of them is repeated
        for (int members : {1, 2, 15, 16, 17, 40})
            for (int repeats : {0, members / 2, members - 1})
                QTest::addRow("%d members, key %d", members, repeats) << members << repeats;
    }

    void duplicateKeysAtEverySize() {
        QFETCH(int, members);
        QFETCH(int, repeats);
        std::string object = "{";
        for (int i = 0; i < members; ++i) object += "\"key" + std::to_string(i) + "\":[" + std::to_string(i) + "],";
        QVERIFY(!rejects(object + "\"other\":{}}"));
        const size_t offset = object.size();
        object += "\"key" + std::to_string(repeats) + "\":null";
        // As the last member or not, alone or nested, the repeat is found at its place.
        for (const char* end : {"}", ",\"last\":true}"}) {
            for (const std::string& prefix : {std::string(), std::string("[{\"a\":1,\"b\":"), std::string("[1,{\"x\":")}) {
                try {
                    Json::parse(prefix + object + end + (prefix.empty() ? "" : "}]"));
                    QFAIL("parsed an object with duplicate keys");
                } catch (const JsonError& e) {
                    QCOMPARE(e.offset(), prefix.size() + offset);
                }
            }
        }
    }

    void enforcesDepthAndSize() {
        JsonParseLimits limits;
        limits.max_depth = 8;
        QVERIFY(!rejects(std::string(8, '[') + std::string(8, ']'), limits));
        QVERIFY(rejects(std::string(9, '[') + std::string(9, ']'), limits));
        QVERIFY(rejects(std::string(5, '[') + std::string(4, '{') + "}}}}]]]]]", limits));
        // The default depth stops a deeply nested document without exhausting the stack.
        QVERIFY(rejects(std::string(100000, '[') + std::string(100000, ']')));
        limits = {};
        limits.max_bytes = 10;
        QVERIFY(!rejects("[1,2,3,45]", limits));
        QVERIFY(rejects("[1,2,3,456]", limits));
    }

    void serializesValidJson() {
        Json o = Json::object();
        o.set("s", "q\"b\\n\n\x01\x1f\xC3\xA9");
        o.set("i", int64_t(-42));
        o.set("d", 0.1);
        o.set("w", 3.0);
        o.set("nan", std::nan(""));
        o.set("t", true);
        o.set("n", nullptr);
        o.set("a", Json::array());
        o.set("i", 7);  // replaces, keeps the position
        QCOMPARE(o.dump(), std::string("{\"s\":\"q\\\"b\\\\n\\n\\u0001\\u001f\xC3\xA9\",\"i\":7,\"d\":0.1,\"w\":3,"
                                       "\"nan\":null,\"t\":true,\"n\":null,\"a\":[]}"));
        // Invalid UTF-8 never reaches the output.
        QCOMPARE(Json("a\xFF\xC3").dump(), std::string("\"a\xEF\xBF\xBD\xEF\xBF\xBD\""));
    }

    void roundTrips() {
        const std::string text =
            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9 \\\"x\\\"\\n\"}],\"temperature\":0.7,\"seed\":-3,\"stop\":[\"a\",\"b\"],\"x\":[[],{}]}";
        const Json v = Json::parse(text);
        QCOMPARE(Json::parse(v.dump()), v);
        QCOMPARE(Json::parse(v.dump()).dump(), v.dump());
        QCOMPARE(v.find("temperature")->as_double(), 0.7);
        QCOMPARE(Json::parse("0.30000000000000004").dump(), std::string("0.30000000000000004"));
    }

    // A negative zero double keeps its sign through dump and parse (found by fuzz_json:
    // "-0E0" was written as "-0", which reads back as the integer 0).
    void negativeZeroRoundTrips() {
        for (const char* text : {"-0E0", "-0.0", "-0e5"}) {
            const Json v = Json::parse(text);
            QVERIFY(std::signbit(v.as_double()));
            const Json again = Json::parse(v.dump());
            QVERIFY2(std::signbit(again.as_double()), v.dump().c_str());
            QCOMPARE(again.dump(), v.dump());
        }
        QCOMPARE(Json::parse("-0").dump(), std::string("0"));  // an integer: no negative zero
    }

    // Json::parse takes simdjson's reading when it has one and nlohmann's otherwise: the
    // fast path must never accept what the reference refuses, nor read a different value.
    void fastPathAgreesWithReference_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<bool>("fast");  // whether the fast path is expected to take it
        const std::pair<const char*, bool> cases[] = {
            {"0", true}, {"-0", true}, {"-0.0", false}, {"-0e3", false}, {"2.0", true}, {"1e308", true},
            {"1e309", false}, {"-1e400", false}, {"9223372036854775807", true}, {"9223372036854775808", true},
            {"-9223372036854775808", true}, {"-9223372036854775809", false}, {"18446744073709551615", true},
            {"18446744073709551616", false}, {"4.9e-324", true}, {"1e-400", true}, {"0.1", true},
            {"\"\\u0000\"", true}, {"\"\\ud83d\\ude00\"", true}, {"\"\\uFFFD\"", true},
            {"{\"a\":1,\"b\":[true,false,null,{}]}", true}, {"{\"a\":1,\"a\":2}", false}, {"[1,2,]", false},
            {"\"\xED\xA0\x80\"", false}, {"\"\x7F\"", true}, {" \t\r\n[ ]\n", true}, {"[1]\x0C", false},
        };
        int i = 0;
        for (const auto& [text, fast] : cases) QTest::addRow("case %d", i++) << QByteArray(text) << fast;
        std::string keys = "{";
        for (int k = 0; k < 40; ++k) keys += "\"k" + std::to_string(k) + "\":" + std::to_string(k) + ",";
        QTest::newRow("40 keys") << QByteArray::fromStdString(keys + "\"end\":0}") << true;
        QTest::newRow("40 keys, a repeat") << QByteArray::fromStdString(keys + "\"k39\":0}") << false;
        QTest::newRow("at the depth limit") << QByteArray::fromStdString(std::string(64, '[') + std::string(64, ']')) << true;
        QTest::newRow("over it") << QByteArray::fromStdString(std::string(65, '[') + std::string(65, ']')) << false;
    }

    void fastPathAgreesWithReference() {
        QFETCH(QByteArray, text);
        QFETCH(bool, fast);
        const std::string_view doc(text.constData(), size_t(text.size()));
        const JsonParseLimits limits;
        const std::optional<Json> quick = arbor::api::json_detail::parse_with_simdjson(doc, limits);
        QCOMPARE(quick.has_value(), fast);
        if (!quick) return;
        const Json reference = arbor::api::json_detail::parse_with_nlohmann(doc, limits);
        QCOMPARE(quick->dump(), reference.dump());
        QVERIFY(*quick == reference);
    }

    // The fast reader keeps one parser's buffers between parses: parses on several threads
    // at once, of documents of other sizes and limits, each still read their own document.
    void parsesOnManyThreadsAtOnce() {
        std::atomic<int> wrong{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([t, &wrong] {
                for (int i = 0; i < 200; ++i) {
                    const int n = 1 + (i * 37 + t * 11) % 500;
                    std::string text = "[";
                    for (int k = 0; k < n; ++k) text += (k ? "," : "") + std::to_string(t * 1000 + k);
                    text += "]";
                    JsonParseLimits limits;
                    limits.max_depth = 1 + i % 3;
                    const std::string nested = std::string(size_t(limits.max_depth), '[') + text +
                                               std::string(size_t(limits.max_depth), ']');
                    const Json v = Json::parse(text, limits);
                    if (v.as_array().size() != size_t(n) || *v.as_array()[size_t(n) - 1].as_integer() != t * 1000 + n - 1)
                        ++wrong;
                    if (!rejects(nested, limits)) ++wrong;  // one level too deep
                }
            });
        for (auto& th : threads) th.join();
        QCOMPARE(wrong.load(), 0);
    }

    void wrongTypeAccessThrows() {
        const Json v = Json::parse("[1]");
        QVERIFY_THROWS_EXCEPTION(arbor::Error, v.as_string());
        QVERIFY_THROWS_EXCEPTION(arbor::Error, v.as_object());
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Json("x").as_bool());
    }
};

QTEST_APPLESS_MAIN(TestJson)
#include "test_json.moc"
