// Pre-tokenizer families, the code-point regex engine and the UTF-8 helpers, without a
// model. Expected llama3/qwen2 splits come from Hugging Face `tokenizers` 0.23 (its
// Split pre-tokenizer, Oniguruma, with the original case-insensitive patterns).
#include "test_support.h"

#include "arbor/error.h"
#include "pretokenizer.h"
#include "regex.h"
#include "unicode.h"

#include <chrono>
#include <string>
#include <vector>

using namespace arbor::tok;
using Words = std::vector<std::string>;

Q_DECLARE_METATYPE(std::string)
Q_DECLARE_METATYPE(Words)

namespace {

Words split(const PreTokenizer& pre, const std::string& text) {
    const std::u32string cps = decode_utf8(text);
    std::vector<uint8_t> flags(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) flags[i] = cp_flags(cps[i]);
    Words out;
    for (const auto& [b, e] : pre.split(cps, flags)) {
        std::string w;
        for (size_t i = b; i < e; ++i) append_utf8(w, cps[i]);
        out.push_back(w);
    }
    return out;
}

// Length of the match at the start of `text`, -1 when none.
long match(const char* pattern, const std::string& text) {
    const Regex re(pattern);
    const std::u32string cps = decode_utf8(text);
    std::vector<uint8_t> flags(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) flags[i] = cp_flags(cps[i]);
    return static_cast<long>(re.match_at({cps.data(), flags.data()}, 0, cps.size(), 0));
}

QString show(const Words& w) {
    QStringList parts;
    for (const auto& s : w) parts << "[" + QString::fromStdString(s) + "]";
    return parts.join(' ');
}

} // namespace

class PreTokenizerTest : public QObject {
    Q_OBJECT

private slots:
    void familyNames_data() {
        QTest::addColumn<QString>("pre");
        QTest::addColumn<QString>("family");
        QTest::addColumn<bool>("ignore_merges");
        QTest::newRow("smollm") << "smollm" << "starcoder" << false;
        QTest::newRow("refact") << "refact" << "starcoder" << false;
        QTest::newRow("llama-bpe") << "llama-bpe" << "llama3" << true;
        QTest::newRow("llama3") << "llama3" << "llama3" << true;
        QTest::newRow("qwen2") << "qwen2" << "qwen2" << false;
        QTest::newRow("mpt") << "mpt" << "gpt2" << false;
        QTest::newRow("gpt-2") << "gpt-2" << "gpt2" << false;
        QTest::newRow("default") << "default" << "default" << false;
        QTest::newRow("missing") << "" << "default" << false;
        QTest::newRow("unknown") << "no-such-pre-tokenizer" << "gpt2" << false;
        QTest::newRow("deepseek-coder") << "deepseek-coder" << "deepseek-coder" << false;
    }

    void familyNames() {
        QFETCH(QString, pre);
        QFETCH(QString, family);
        QFETCH(bool, ignore_merges);
        const PreTokenizer p(pre.toStdString());
        QCOMPARE(QString::fromStdString(p.info().family), family);
        QCOMPARE(p.info().ignore_merges, ignore_merges);
    }

    void splits_data() {
        QTest::addColumn<QString>("pre");
        QTest::addColumn<std::string>("text");
        QTest::addColumn<Words>("words");
        const std::string contractions = "I'M here, they'LL see 1234567 items!!\n\n  ok";
        QTest::newRow("llama3 contractions") << "llama-bpe" << contractions
            << Words{"I", "'M", " here", ",", " they", "'LL", " see", " ", "123", "456", "7", " items", "!!\n\n", " ", " ok"};
        QTest::newRow("qwen2 contractions") << "qwen2" << contractions
            << Words{"I", "'M", " here", ",", " they", "'LL", " see", " ", "1", "2", "3", "4", "5", "6", "7", " items", "!!\n\n", " ", " ok"};
        const std::string code = "def f():\n\treturn  x  \n";
        QTest::newRow("llama3 code") << "llama3" << code
            << Words{"def", " f", "():\n", "\treturn", " ", " x", "  \n"};
        const std::string cjk = "\u4EF7\u683C: \u00A51234\uFF0C\u51713\u4EF6\u3002 \U0001F600\U0001F600 ok";
        QTest::newRow("llama3 cjk") << "llama3" << cjk
            << Words{"\u4EF7\u683C", ":", " \u00A5", "123", "4", "\uFF0C\u5171", "3", "\u4EF6", "\u3002", " \U0001F600\U0001F600", " ok"};
        QTest::newRow("qwen2 cjk") << "qwen2" << cjk
            << Words{"\u4EF7\u683C", ":", " \u00A5", "1", "2", "3", "4", "\uFF0C\u5171", "3", "\u4EF6", "\u3002", " \U0001F600\U0001F600", " ok"};
        const std::string spaces = "  \u00A0x\u3000y\r\n\r\nz   ";
        QTest::newRow("llama3 unicode spaces") << "llama3" << spaces
            << Words{"  ", "\u00A0x", "\u3000y", "\r\n\r\n", "z", "   "};
        // Hand-derived: smollm splits every digit first, then runs the GPT-2 pattern.
        QTest::newRow("smollm digits") << "smollm" << std::string("a 42x")
            << Words{"a", " ", "4", "2", "x"};
        QTest::newRow("gpt2 spaces before word") << "gpt-2" << std::string("a   b")
            << Words{"a", "  ", " b"};
    }

    void splits() {
        QFETCH(QString, pre);
        QFETCH(std::string, text);
        QFETCH(Words, words);
        QCOMPARE(show(split(PreTokenizer(pre.toStdString()), text)), show(words));
    }

    // "\s+$" tried at every position of a long run of whitespace that does not end the
    // text is quadratic for a plain backtracking search; this must stay linear.
    void longWhitespaceStaysLinear() {
        std::string text;
        for (int i = 0; i < 50000; ++i) text += " \t";
        const auto start = std::chrono::steady_clock::now();
        const Words words = split(PreTokenizer("deepseek-llm"), text + "5");
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        QCOMPARE(words.size(), size_t{2});
        QCOMPARE(words[0], text);
        QCOMPARE(words[1], std::string("5"));
        QVERIFY2(s < 5.0, std::to_string(s).c_str());
    }

    void regexSemantics() {
        QCOMPARE(match("a|ab", "ab"), 1L);             // first alternative wins
        QCOMPARE(match("(?:ab|a)c", "ac"), 2L);        // backtracks into the group
        QCOMPARE(match("\\s+(?!\\S)", "   x"), 2L);    // leaves one space for the word
        QCOMPARE(match("\\s+(?!\\S)", "   "), 3L);
        QCOMPARE(match("\\s+$", "  x"), -1L);
        QCOMPARE(match("\\p{N}{1,3}", "12345"), 3L);
        QCOMPARE(match("x{2}", "xxx"), 2L);
        QCOMPARE(match("a+?", "aaa"), 1L);
        QCOMPARE(match("[^\\s\\p{L}\\p{N}]+", "?!\u00BF a"), 3L);
        QCOMPARE(match("\\p{L}+", "\u00E9t\u00E9\u4E2D1"), 4L);
        QCOMPARE(match("'[sS]", "'S"), 2L);
        QCOMPARE(match("(?=[\\p{L}])[^a-z]", "B"), 1L);
        QCOMPARE(match("(?=[\\p{L}])[^a-z]", "1"), -1L);
        // Non-ASCII whitespace is \s but never falls inside a literal range.
        QCOMPARE(match("\\s", "\u3000"), 1L);
        QCOMPARE(match("[\u3000-\u3002]", "\u3000"), -1L);
        QCOMPARE(match("[\u3000-\u3002]", "\u3001"), 1L);
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Regex("(a"));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Regex("[z-a]"));
        QVERIFY_THROWS_EXCEPTION(arbor::Error, Regex("(?:a*)*"));
    }

    void sanitizeUtf8() {
        size_t used = 0;
        QCOMPARE(sanitize_utf8("ab\xE4\xB8", false, used), std::string("ab"));
        QCOMPARE(used, size_t{2});
        QCOMPARE(sanitize_utf8("ab\xE4\xB8", true, used), std::string("ab\uFFFD"));
        QCOMPARE(used, size_t{4});
        QCOMPARE(sanitize_utf8("\xE4\xB8\xAD", false, used), std::string("\u4E2D"));
        QCOMPARE(sanitize_utf8("a\xFF" "b", false, used), std::string("a\uFFFD" "b"));
        QCOMPARE(sanitize_utf8("\xC3(", false, used), std::string("\uFFFD("));  // lead without trail
        QCOMPARE(sanitize_utf8("\xED\xA0\x80", true, used), std::string("\uFFFD\uFFFD\uFFFD"));  // surrogate
        QCOMPARE(sanitize_utf8("\xF0\x9F\x98", false, used), std::string());
        QCOMPARE(used, size_t{0});
    }

    void byteAlphabet() {
        const ByteAlphabet& a = byte_alphabet();
        QCOMPARE(a.encode(' '), std::string("\u0120"));  // the GPT-2 'G-dot' space
        QCOMPARE(a.encode('\n'), std::string("\u010A"));
        QCOMPARE(a.encode('A'), std::string("A"));
        QCOMPARE(a.encode(0xAD), std::string("\u0143"));
        for (int b = 0; b < 256; ++b) QCOMPARE(a.decode(decode_utf8(a.encode(static_cast<uint8_t>(b)))[0]), b);
        QCOMPARE(a.decode(U'\u4E2D'), -1);
    }
};

QTEST_APPLESS_MAIN(PreTokenizerTest)
#include "test_pretokenizer.moc"
