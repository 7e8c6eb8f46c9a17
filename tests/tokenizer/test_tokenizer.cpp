// The default model's tokenizer (SmolLM2: byte-level BPE, pre-tokenizer "smollm").
//
// Expected ids come from an independent implementation: Hugging Face `tokenizers` 0.23
// (Python), a BPE model built from this GGUF's tokenizer.ggml.tokens/merges with
// SmolLM2's pre-tokenizer (Digits(individual) + ByteLevel) and its control tokens added
// as special tokens. Vocabulary facts (size, ids of token texts) were read with the
// `gguf` Python package.
#include "test_support.h"

#include "arbor/error.h"
#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

#include <memory>

using arbor::TokenId;
using Ids = std::vector<TokenId>;

Q_DECLARE_METATYPE(std::string)
Q_DECLARE_METATYPE(Ids)

namespace {

QString str(const Ids& ids) {
    QStringList parts;
    for (TokenId id : ids) parts << QString::number(id);
    return parts.join(' ');
}

// Strict well-formedness (Unicode table 3-7), written out here to stay independent of
// the decoder under test.
bool valid_utf8(const std::string& s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    for (size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        size_t len = 1;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b < 0x80) len = 1;
        else if (b >= 0xC2 && b <= 0xDF) len = 2;
        else if (b >= 0xE0 && b <= 0xEF) { len = 3; lo = b == 0xE0 ? 0xA0 : 0x80; hi = b == 0xED ? 0x9F : 0xBF; }
        else if (b >= 0xF0 && b <= 0xF4) { len = 4; lo = b == 0xF0 ? 0x90 : 0x80; hi = b == 0xF4 ? 0x8F : 0xBF; }
        else return false;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; ++k) {
            const unsigned char c = p[i + k];
            if (k == 1 ? (c < lo || c > hi) : (c & 0xC0) != 0x80) return false;
        }
        i += len;
    }
    return true;
}

} // namespace

class TokenizerTest : public QObject {
    Q_OBJECT

    std::unique_ptr<arbor::GgufFile> file_;
    std::unique_ptr<arbor::Tokenizer> tok_;

private slots:
    void initTestCase() {
        ARBOR_REQUIRE_MODEL();
        file_ = arbor::GgufFile::open(arbor::test::model_path());
        tok_ = arbor::Tokenizer::from_gguf(*file_);
        QVERIFY(tok_);
    }

    void vocabulary() {
        QCOMPARE(tok_->n_vocab(), 49152);
        QCOMPARE(tok_->bos(), 1);
        QCOMPARE(tok_->eos(), 2);
        QVERIFY(!tok_->adds_bos());  // tokenizer.ggml.add_bos_token = false
        QCOMPARE(tok_->find("<|im_start|>"), std::optional<TokenId>(1));
        QCOMPARE(tok_->find("Hello"), std::optional<TokenId>(19556));
        QVERIFY(!tok_->find("no such token text").has_value());
        QVERIFY(tok_->is_special(1));
        QVERIFY(!tok_->is_special(19556));
        QCOMPARE(tok_->token_bytes(905), std::string(" world"));  // "Ġworld"
        QCOMPARE(tok_->token_bytes(2), std::string("<|im_end|>"));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, tok_->token_bytes(-1));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, tok_->token_bytes(49152));
    }

    void matchesReference_data() {
        QTest::addColumn<std::string>("text");
        QTest::addColumn<Ids>("ids");
        QTest::newRow("words") << std::string("Hello world") << Ids{19556, 905};
        QTest::newRow("digits split one by one")
            << std::string("The year 2024 had 366 days.")
            << Ids{504, 713, 216, 34, 32, 34, 36, 761, 216, 35, 38, 38, 2009, 30};
        QTest::newRow("contractions and dash")
            << std::string("I'm here, you're there \u2014 we'll see.")
            << Ids{57, 5248, 1535, 28, 346, 2316, 665, 1841, 392, 3060, 963, 30};
        QTest::newRow("chinese")
            << std::string("\u4E2D\u6587\u6D4B\u8BD5\uFF1A\u4F60\u597D\uFF0C\u4E16\u754C\uFF01")
            << Ids{28589, 29184, 43222, 229, 16313, 239, 24713, 18645, 250, 48392, 138, 12831, 7906, 240, 178, 239, 230, 8083, 219};
        QTest::newRow("emoji")
            << std::string("emoji \U0001F44D\U0001F3FD and \u2764\uFE0F done")
            << Ids{391, 33777, 15107, 235, 231, 10813, 233, 138, 284, 4636, 247, 114, 31752, 2294};
        QTest::newRow("code")
            << std::string("def f(x):\n    return x**2  # square")
            << Ids{1604, 275, 24, 104, 727, 472, 1003, 1792, 828, 34, 216, 907, 5222};
    }

    void matchesReference() {
        QFETCH(std::string, text);
        QFETCH(Ids, ids);
        QCOMPARE(str(tok_->encode(text, false, false)), str(ids));
        QCOMPARE(str(tok_->encode(text, false, true)), str(ids));
        QCOMPARE(str(tok_->encode(text, true, false)), str(ids));  // the model asks for no BOS
    }

    void specialTokens() {
        const std::string prompt = "<|im_start|>user";
        QCOMPARE(str(tok_->encode(prompt, false, true)), str({1, 4093}));
        QCOMPARE(str(tok_->encode("<|im_start|>user\nHi there<|im_end|>", false, true)),
                 str({1, 4093, 198, 26843, 665, 2}));

        const Ids plain = tok_->encode(prompt, false, false);
        QVERIFY(plain.size() > 2);
        for (TokenId id : plain) QVERIFY2(!tok_->is_special(id), std::to_string(id).c_str());
        QCOMPARE(tok_->decode(plain), prompt);
        QCOMPARE(tok_->decode(tok_->encode(prompt, false, true)), prompt);
    }

    void roundTrip_data() {
        QTest::addColumn<std::string>("text");
        QTest::newRow("empty") << std::string();
        QTest::newRow("english") << std::string("The quick brown fox jumps over the lazy dog.");
        QTest::newRow("whitespace") << std::string("  two\tspaces\n\n\r\n   trailing   ");
        QTest::newRow("chinese") << std::string("\u4ECA\u5929\u5929\u6C14\u5F88\u597D\u3002\u6211\u4EEC\u53BB\u516C\u56ED\u5427\uFF01");
        QTest::newRow("emoji zwj") << std::string("family \U0001F468\u200D\U0001F469\u200D\U0001F467 flag \U0001F1EB\U0001F1F7");
        QTest::newRow("combining") << std::string("e\u0301 a\u0308 \u0928\u093F\u0930\u094D");
        QTest::newRow("rtl and digits") << std::string("\u0645\u0631\u062D\u0628\u0627 \u0663\u0664\u0665 x\u00B2 \u00BD");
        QTest::newRow("unicode spaces") << std::string("a\u00A0b\u3000c\u2028d\u0085e");
        QTest::newRow("control chars") << std::string("\x01\x02\x7F tab\x0B vt");
        QTest::newRow("code") << std::string("for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }\n");
        QTest::newRow("long") << std::string(2000, 'x') + std::string(300, ' ') + "end";
    }

    void roundTrip() {
        QFETCH(std::string, text);
        const Ids ids = tok_->encode(text, false, false);
        QCOMPARE(tok_->decode(ids), text);
        QCOMPARE(tok_->decode(tok_->encode(text, false, true)), text);
        for (TokenId id : ids) QVERIFY(id >= 0 && id < tok_->n_vocab());
    }

    void invalidUtf8BecomesReplacementCharacter() {
        const Ids ids = tok_->encode("a\xFF" "b", false, false);
        QCOMPARE(tok_->decode(ids), std::string("a\uFFFD" "b"));
    }

    void streamDecoderHoldsSplitCharacter() {
        // Byte-level tokens for the two bytes of "\u00E9" (C3 A9) are written with the
        // stand-in characters U+00C3 and U+00A9.
        const auto lead = tok_->find("\u00C3");
        const auto trail = tok_->find("\u00A9");
        QVERIFY(lead && trail);
        QCOMPARE(tok_->token_bytes(*lead), std::string("\xC3"));
        arbor::StreamDecoder stream(*tok_);
        QCOMPARE(stream.push(*lead), std::string());
        QCOMPARE(stream.push(*trail), std::string("\u00E9"));
        QCOMPARE(stream.flush(), std::string());

        arbor::StreamDecoder cut(*tok_);
        QCOMPARE(cut.push(*lead), std::string());
        QCOMPARE(cut.flush(), std::string("\uFFFD"));
    }

    void streamDecoderOnMultiByteText() {
        const std::string text = "ok \U0001F44D\U0001F3FD \u2764\uFE0F \u4E2D\u6587\u6D4B\u8BD5 done";
        const Ids ids = tok_->encode(text, false, false);
        bool some_token_splits = false;
        for (TokenId id : ids) some_token_splits |= !valid_utf8(tok_->token_bytes(id));
        QVERIFY2(some_token_splits, "the test text should contain tokens that split a character");

        arbor::StreamDecoder stream(*tok_);
        std::string joined;
        for (TokenId id : ids) {
            const std::string piece = stream.push(id);
            QVERIFY2(valid_utf8(piece), piece.c_str());
            joined += piece;
        }
        joined += stream.flush();
        QCOMPARE(joined, text);
    }

    void endOfGeneration() {
        QVERIFY(tok_->is_end_of_generation(2));   // <|im_end|>, also eos
        QVERIFY(tok_->is_end_of_generation(0));   // <|endoftext|>
        QVERIFY(!tok_->is_end_of_generation(1));  // <|im_start|>
        QVERIFY(!tok_->is_end_of_generation(19556));
        QVERIFY(!tok_->is_end_of_generation(-1));
    }

    // Round trip of a long mixed text (speed is measured by arbor-bench, not asserted here).
    void roundTripsTenKilobytes() {
        std::string text;
        while (text.size() < 10000)
            text += "The quick brown fox (\u00E9t\u00E9 \u4E2D\u6587 \U0001F600) jumps over 1234 lazy dogs; x += y;\n";
        const Ids ids = tok_->encode(text, false, false);
        QVERIFY(ids.size() > 1000);
        QCOMPARE(tok_->decode(ids), text);
    }
};

QTEST_APPLESS_MAIN(TokenizerTest)
#include "test_tokenizer.moc"
