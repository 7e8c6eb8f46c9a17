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
    std::vector<CpFlags> flags(cps.size());
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
    std::vector<CpFlags> flags(cps.size());
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
        QTest::newRow("kimi-k2") << "kimi-k2" << "kimi-k2" << false;
        QTest::newRow("glm4") << "glm4" << "glm4" << true;
        QTest::newRow("youtu") << "youtu" << "youtu" << true;
    }

    // Every name llama.cpp's byte-level BPE vocabularies use (its llama-vocab.cpp) is known:
    // no warning, and its patterns compile.
    void everyReferenceNameIsKnown() {
        const char* names[] = {
            "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
            "midm-2.0", "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5",
            "youtu", "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
            "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jais-2", "jina-v1-en",
            "jina-v2-code", "roberta-bpe", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo",
            "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "chatglm-bpe", "glm4",
            "glm5", "viking", "jais", "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone",
            "exaone4", "exaone-moe", "chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2",
            "talkie", "granite-embed-multi-97m", "tiny_aya", "cohere2moe", "superbpe", "trillion",
            "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "hunyuan",
            "hunyuan-dense", "hy_v4", "joyai-llm", "kimi-k2", "ufakzeka", "grok-2", "afmoe", "laguna",
            "minimax-m2", "solar-open", "mellum2"};
        for (const char* name : names) {
            const PreTokenizer p(name);
            QVERIFY2(p.warning().empty(), name);
            QVERIFY2(!p.info().patterns.empty(), name);
        }
    }

    // An unknown or missing name is a warning the user can read, not a silent fallback.
    void unknownOrMissingNameWarns() {
        const PreTokenizer unknown("xyz");
        QCOMPARE(unknown.warning(),
                 std::string("unknown pre-tokenizer 'xyz': using gpt2's splitting; tokenization may differ "
                             "from the model's"));
        QCOMPARE(unknown.info().family, std::string("gpt2"));
        const PreTokenizer missing("");
        QVERIFY2(missing.warning().find("names no pre-tokenizer (tokenizer.ggml.pre)") != std::string::npos,
                 missing.warning().c_str());
        QCOMPARE(missing.info().family, std::string("default"));
        // jina's "whitespace" splitting (a tokenizer session of its own in llama.cpp) is not
        // supported: warned too. SentencePiece-style BPE's names are known, and say so.
        QVERIFY(!PreTokenizer("whitespace").warning().empty());
        for (const char* name : {"gemma4", "granite-embed-multi-311m", "sarvam-moe"}) {
            const PreTokenizer p(name);
            QVERIFY2(p.warning().empty() && p.info().raw_utf8, name);
            QCOMPARE(p.info().newline_words_whole, std::string(name) != "sarvam-moe");
        }
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
        // Hand-derived from the families' patterns with Unicode's classes (as Hugging Face's
        // tokenizers run them); llama.cpp's unicode_regex_split gives the same words for all
        // but tekken and gpt-4o, whose letter classes it approximates. Combining marks: qwen35 keeps U+0301 with its letter,
        // qwen2 (no \p{M}) leaves it on its own.
        const std::string marks = "cafe\u0301 na\u00EFve";
        QTest::newRow("qwen35 combining mark") << "qwen35" << marks << Words{"cafe\u0301", " na\u00EFve"};
        QTest::newRow("qwen2 combining mark") << "qwen2" << marks << Words{"cafe", "\u0301", " na\u00EFve"};
        // Case-aware words (\p{Lu} against \p{Ll}, also beyond ASCII; marks join either).
        QTest::newRow("tekken case") << "tekken" << std::string("HelloWORLDFoo bar")
            << Words{"Hello", "WORLDFoo", " bar"};
        QTest::newRow("tekken accented case") << "tekken" << std::string("\u00C9cole\u00C9T\u00C9")
            << Words{"\u00C9cole", "\u00C9T\u00C9"};
        QTest::newRow("gpt-4o mark") << "gpt-4o" << std::string("e\u0301t\u00E9 I'M")
            << Words{"e\u0301t\u00E9", " I'M"};
        // Han runs apart from other letters (kana is \p{Lo} but not Han).
        QTest::newRow("kimi-k2 han") << "kimi-k2" << std::string("\u4E2D\u6587Text \u65E5\u672C\u8A9E\u306Etext")
            << Words{"\u4E2D\u6587", "Text", " ", "\u65E5\u672C\u8A9E", "\u306Etext"};
        // Symbols (\p{S}: + = and the emoji) against letters.
        QTest::newRow("deepseek-v3 symbols") << "deepseek-v3" << std::string("a+b=\U0001F600\U0001F600 ok")
            << Words{"a", "+b", "=\U0001F600\U0001F600", " ok"};
        // Digits in threes from the right: a split pattern of lookaheads only (empty matches
        // are split points), \b, and the AFMoE grouping.
        QTest::newRow("superbpe digits") << "superbpe" << std::string("x1234567y 123456")
            << Words{"x", "1", "234", "567", "y ", "123", "456"};
        QTest::newRow("tiny_aya digits") << "tiny_aya" << std::string("1234567 and 12x")
            << Words{"1", "234", "567", " and", " ", "12", "x"};
        QTest::newRow("afmoe digits") << "afmoe" << std::string("1234567 ok")
            << Words{"1", "234", "567", " ok"};
        // Letters joined across single spaces, marks included.
        QTest::newRow("exaone-moe words") << "exaone-moe" << std::string("Hello Wo\u0308rld 12")
            << Words{"Hello Wo\u0308rld", " ", "1", "2"};
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

    // The digit grouping runs natively; it must split as the patterns it stands for do.
    void digitGroupsMatchTheirPatterns() {
        const std::vector<std::string> texts = {
            "1", "12", "123", "1234", "12345678", "x1234567y", "12x", "12 ", "1234\u00BD5", "\u0663\u0664\u0665\u0666",
            "a1b22c333d4444", "99_1", "\u00E91234", "1234\u0301", "", " 000000 0"};
        const struct {
            const char* pattern;
            DigitGroups native;
        } cases[] = {{"\\p{N}{1,3}(?=(?:\\p{N}{3})*(?!\\p{N}))", {kNumber, false}},
                     {"\\d{1,3}(?=(?:\\d{3})*\\b)", {kDigit, true}}};
        for (const auto& c : cases) {
            const Regex re(c.pattern);
            for (const auto& text : texts) {
                const std::u32string cps = decode_utf8(text);
                std::vector<CpFlags> flags(cps.size());
                for (size_t i = 0; i < cps.size(); ++i) flags[i] = cp_flags(cps[i]);
                const RegexInput in{cps.data(), flags.data()};
                std::vector<std::pair<size_t, size_t>> by_regex, native;
                re.split(in, {{0, cps.size()}}, by_regex);
                c.native.split(in, {{0, cps.size()}}, native);
                QVERIFY2(by_regex == native, (std::string(c.pattern) + " on '" + text + "'").c_str());
            }
        }
    }

    // As patterns, each group's lookahead would scan the rest of the run: quadratic.
    void longDigitRunStaysLinear() {
        const std::string digits(300000, '7');
        const auto start = std::chrono::steady_clock::now();
        const Words words = split(PreTokenizer("tiny_aya"), digits + " x");
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        QCOMPARE(words.size(), size_t{100000 + 1});
        QCOMPARE(words.front(), std::string("777"));
        QCOMPARE(words.back(), std::string(" x"));
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

    // The Unicode classes the families' patterns use, on combining marks, symbols and
    // emoji, CJK, and digits of other scripts.
    void unicodeClasses() {
        QCOMPARE(match("\\p{M}+", "\u0301\u0308a"), 2L);
        QCOMPARE(match("a\\p{M}*", "a\u0301\u0302b"), 3L);
        QCOMPARE(match("[^\\p{L}\\p{M}]", "\u0301"), -1L);
        QCOMPARE(match("\\P{M}", "\u0301"), -1L);
        QCOMPARE(match("\\p{S}+", "$+\u20AC\U0001F600a"), 4L);  // Sc Sm Sc So
        QCOMPARE(match("\\p{S}", "!"), -1L);                       // Po
        QCOMPARE(match("\\p{P}+", "!?\u3002\u00BFa"), 4L);
        QCOMPARE(match("\\p{P}", "$"), -1L);
        QCOMPARE(match("\\p{Lu}+", "\u00C9COLEs"), 5L);
        QCOMPARE(match("\\p{Ll}+", "\u00E9coleS"), 5L);
        QCOMPARE(match("\\p{Lu}", "\u01C5"), -1L);  // the titlecase digraph Dz
        QCOMPARE(match("\\p{Lt}", "\u01C5"), 1L);
        QCOMPARE(match("\\p{Lm}", "\u02B0"), 1L);
        QCOMPARE(match("\\p{Lo}+", "\u4E2D\u6587\u3042a"), 3L);
        QCOMPARE(match("\\p{Han}+", "\u4E2D\u6587\u3042"), 2L);
        QCOMPARE(match("\\p{L}+", "\u4E2D\u3042\uAC00x"), 4L);
        QCOMPARE(match("\\p{N}+", "\u0663\u00BD\u216B3x"), 4L);  // Nd No Nl Nd
        QCOMPARE(match("\\p{Nd}+", "\u06633\u00BD"), 2L);
        QCOMPARE(match("\\d+", "\u06633\u00BD"), 2L);
        QCOMPARE(match("\\P{L}+", "12 a"), 3L);
        QCOMPARE(match("[\\p{Lu}\\p{M}]+", "A\u0301Bc"), 3L);
        QCOMPARE(match("(?:(?!\\p{Han})\\p{Lo})+", "\u3042\u4E2D"), 1L);
        QCOMPARE(match("\\bab\\b", "ab"), 2L);
        QCOMPARE(match("\\d+\\b", "12x"), -1L);
        QCOMPARE(match("\\d+\\b", "12 "), 2L);
        QCOMPARE(match("a\\B", "ab"), 1L);
        QCOMPARE(match("\\w+", "\u00E9t\u00E9_1\u0301 "), 6L);
    }

    void invalidPatternsAreClearErrors() {
        for (const char* bad : {"\\p{Xyz}", "\\p{L", "\\pL", "a\\b+", "[\\p{Q}]", "\\q"}) {
            try {
                Regex re(bad);
                QFAIL(bad);
            } catch (const arbor::Error& e) {
                const std::string what = e.what();
                QVERIFY2(what.find("pre-tokenizer pattern '") == 0, what.c_str());
                QVERIFY2(what.find(" at offset ") != std::string::npos, what.c_str());
            }
        }
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
