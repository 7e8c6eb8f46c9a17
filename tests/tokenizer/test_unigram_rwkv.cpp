// The Unigram ("t5") and RWKV tokenizers beyond the fixture vectors: small vocabularies
// written here that reach what the fixtures do not (no charsmap, each whitespace mode, a
// hand-made charsmap, user-defined, byte and unused tokens, ties), decoding, special
// tokens, and vocabularies that are malformed or lack tokens.
//
// Expected ids and decoded pieces are llama.cpp's (llama_tokenize without special tokens,
// llama_token_to_piece with them), on the same vocabularies written with the `gguf`
// Python package; on the fixtures, llama.cpp gives them on the original file and the
// trimmed one alike.
#include "test_support.h"

#include "arbor/error.h"
#include "arbor/gguf.h"
#include "arbor/tokenizer.h"
#include "../gguf/gguf_test_writer.h"

#include <fstream>
#include <functional>
#include <sstream>

using arbor::TokenId;
using Ids = std::vector<TokenId>;

Q_DECLARE_METATYPE(std::vector<std::string>)
Q_DECLARE_METATYPE(std::function<void(arbor::test::GgufWriter&)>)

namespace {

namespace fs = std::filesystem;
using namespace arbor::test;

QString str(const Ids& ids) {
    QStringList parts;
    for (TokenId id : ids) parts << QString::number(id);
    return parts.join(' ');
}

fs::path fixture(const char* name) { return test_data_dir() / "tokenizer" / name; }

std::string stream_decode(const arbor::Tokenizer& tok, const Ids& ids) {
    arbor::StreamDecoder stream(tok);
    std::string out;
    for (TokenId id : ids) out += stream.push(id);
    return out + stream.flush();
}

enum Type { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Piece {
    const char* text;
    Type type;
    float score;
};

// A unigram vocabulary whose choices depend on the scores: "ab" beats "a" "b", "▁a" "b"
// beat "▁ab", "ab" "ab" beat "abab", "de" ties "d" "e". The user-defined token's score
// in the file is ignored (it counts 0); the unused one is matchable but scores lowest.
const std::vector<Piece> kUnigramPieces = {
    {"<pad>", kControl, 0},     {"</s>", kControl, 0},   {"<unk>", kUnknown, 0},     {"\u2581", kNormal, -2},
    {"a", kNormal, -3},         {"b", kNormal, -3},      {"ab", kNormal, -4},        {"\u2581a", kNormal, -2.5f},
    {"\u2581ab", kNormal, -7},  {"abab", kNormal, -9},   {"c", kNormal, -6},         {"bc", kNormal, -8.5f},
    {"XY", kUserDefined, -100}, {"<0x41>", kByte, 0},    {"[PAD14]", kUnused, -1000}, {"\u00e9", kNormal, -5},
    {"b\u2581", kNormal, -4.2f}, {"d", kNormal, -3},     {"e", kNormal, -3},         {"de", kNormal, -6},
};

GgufWriter unigram_writer(const std::vector<Piece>& pieces = kUnigramPieces, const char* model = "t5") {
    std::vector<arbor::GgufValue> texts, types, scores;
    for (const Piece& p : pieces) {
        texts.push_back(gv::str(p.text));
        types.push_back(gv::i32(p.type));
        scores.push_back(gv::f32(p.score));
    }
    GgufWriter w;
    w.add("general.architecture", gv::str("t5"));
    w.add("tokenizer.ggml.model", gv::str(model));
    w.add("tokenizer.ggml.tokens", gv::arr(arbor::GgufType::String, texts));
    w.add("tokenizer.ggml.token_type", gv::arr(arbor::GgufType::Int32, types));
    w.add("tokenizer.ggml.scores", gv::arr(arbor::GgufType::Float32, scores));
    return w;
}

arbor::GgufValue byte_array(const std::string& bytes, arbor::GgufType type = arbor::GgufType::Uint8) {
    std::vector<arbor::GgufValue> items;
    for (unsigned char b : bytes) items.push_back(type == arbor::GgufType::Uint8 ? gv::u8(b) : gv::i8(int8_t(b)));
    return gv::arr(type, items);
}

// A precompiled charsmap: its trie's nodes (the 32-bit words of ugm_tokenizer.cpp) and
// the replacement strings after them.
std::string charsmap(const std::vector<uint32_t>& nodes, const std::string& strings) {
    std::string out;
    const auto u32 = [&](uint32_t v) {
        for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
    };
    u32(uint32_t(nodes.size() * 4));
    for (uint32_t n : nodes) u32(n);
    return out + strings;
}

uint32_t trie_node(uint32_t label, uint32_t base, bool replacement) {
    return base << 10 | uint32_t(replacement) << 8 | label;
}

// Root at 0; "a" -> "b" and "X" -> "c" (their value nodes at 200 and 201); 256 nodes, so
// that every byte out of every state stays inside.
std::vector<uint32_t> small_trie_nodes() {
    std::vector<uint32_t> nodes(256, 0);
    nodes['a'] = trie_node('a', 'a' ^ 200, true);
    nodes[200] = 0x80000000u | 0;
    nodes['X'] = trie_node('X', 'X' ^ 201, true);
    nodes[201] = 0x80000000u | 2;
    return nodes;
}

} // namespace

class TestUnigramRwkv : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::vector<std::unique_ptr<arbor::GgufFile>> files_;  // tokenizers read from them

    std::unique_ptr<arbor::Tokenizer> load(const GgufWriter& w) {
        const fs::path path = fs::path(dir_.path().toStdString()) / ("v" + std::to_string(files_.size()) + ".gguf");
        write_file(path, w.bytes());
        files_.push_back(arbor::GgufFile::open(path));
        return arbor::Tokenizer::from_gguf(*files_.back());
    }

    // The message of the arbor::Error loading `w` throws (empty when it loads).
    QString load_error(const GgufWriter& w) {
        try {
            load(w);
        } catch (const arbor::Error& e) {
            return QString::fromUtf8(e.what());
        }
        return {};
    }

private slots:
    // No charsmap: only spaces are normalized, as each whitespace mode says.
    void unigramWhitespaceModes_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<std::vector<std::string>>("ids");
        QTest::newRow("plain") << "plain"
                               << std::vector<std::string>{"6 7 5", "6 6", "3 7 3 3 16", "12 6 3 12", "4 12 5",
                                                           "2 7 16 2", "19", "6 10", "15 3 15", "2", "16 3 10"};
        QTest::newRow("space prefix") << "prefix"
                                      << std::vector<std::string>{"7 16 6", "7 5 6", "3 3 7 3 3 16", "12 7 16 12",
                                                                  "7 12 3 5", "3 2 7 16 2", "3 19", "7 11",
                                                                  "3 15 3 15", "3 2", "3 16 3 10"};
        QTest::newRow("spaces merged") << "merge"
                                       << std::vector<std::string>{"7 16 6", "7 5 6", "7 3 5", "12 7 5 12", "7 12 3 5",
                                                                   "3 2 7 16 2", "3 19", "7 11", "3 15 3 15", "3 2",
                                                                   "3 16 10"};
    }

    void unigramWhitespaceModes() {
        QFETCH(QString, mode);
        QFETCH(std::vector<std::string>, ids);
        GgufWriter w = unigram_writer();
        if (mode == "prefix") w.add("tokenizer.ggml.add_space_prefix", gv::boolean(true));
        if (mode == "merge") w.add("tokenizer.ggml.remove_extra_whitespaces", gv::boolean(true));
        const auto tok = load(w);
        const std::vector<std::string> texts = {"ab ab", "abab", "  a  b ", "XYab XY", "aXYb", "zz ab zq",
                                                "de", "abc", "\u00e9 \u00e9", "[PAD14]", "b  c"};
        QCOMPARE(texts.size(), ids.size());
        for (size_t i = 0; i < texts.size(); ++i)
            QCOMPARE(str(tok->encode(texts[i], false, false)), QString::fromStdString(ids[i]));
    }

    // A hand-made charsmap rewriting "a" to "b" and "X" to "c". Text along a user-defined
    // token's trie ("X", the start of "XY") is left alone even where no token ends, as
    // llama.cpp does: "Xa" gives <unk> b, not c b.
    void unigramSmallCharsmap() {
        GgufWriter w = unigram_writer();
        w.add("tokenizer.ggml.precompiled_charsmap", byte_array(charsmap(small_trie_nodes(), std::string("b\0c\0", 4))));
        const auto tok = load(w);
        QCOMPARE(str(tok->encode("ab a", false, false)), QString("5 16 5"));
        QCOMPARE(str(tok->encode("Xa", false, false)), QString("2 5"));
        QCOMPARE(str(tok->encode("XYa", false, false)), QString("12 5"));
        QCOMPARE(str(tok->encode("aX", false, false)), QString("5 2"));
        QCOMPARE(str(tok->encode("cab", false, false)), QString("10 5 5"));
        QCOMPARE(tok->decode(tok->encode("Xa", false, false)), std::string("<unk>b"));

        // Int8 elements are read as the same bytes.
        GgufWriter signed_bytes = unigram_writer();
        signed_bytes.add("tokenizer.ggml.precompiled_charsmap",
                         byte_array(charsmap(small_trie_nodes(), std::string("b\0c\0", 4)), arbor::GgufType::Int8));
        QCOMPARE(str(load(signed_bytes)->encode("ab a", false, false)), QString("5 16 5"));
    }

    void unigramTokenBytes() {
        const auto tok = load(unigram_writer());
        QCOMPARE(tok->token_bytes(2), std::string("<unk>"));   // unknown: its text
        QCOMPARE(tok->token_bytes(7), std::string(" a"));      // "▁a"
        QCOMPARE(tok->token_bytes(16), std::string("b "));     // "b▁"
        QCOMPARE(tok->token_bytes(12), std::string("XY"));     // user-defined: its text
        QCOMPARE(tok->token_bytes(13), std::string("A"));      // byte token <0x41>
        QCOMPARE(tok->token_bytes(14), std::string());         // unused: nothing
        QCOMPARE(tok->token_bytes(0), std::string("<pad>"));   // control: its text
        QVERIFY_THROWS_EXCEPTION(arbor::Error, tok->token_bytes(20));
        QVERIFY(!tok->adds_bos());
    }

    // The trimmed nomic-bert-moe (XLM-RoBERTa) vocabulary: flags, special tokens, invalid
    // UTF-8 and decoding. Its inputs are all from its .inp, whose pieces the trimmed file
    // keeps.
    void unigramFixture() {
        const auto file = arbor::GgufFile::open(fixture("ggml-vocab-nomic-bert-moe.gguf"));
        const auto tok = arbor::Tokenizer::from_gguf(*file);
        QCOMPARE(tok->n_vocab(), 250048);
        QVERIFY(tok->adds_bos());  // tokenizer.ggml.add_bos_token
        QCOMPARE(tok->bos(), 0);
        QCOMPARE(tok->eos(), 2);
        QVERIFY(tok->is_end_of_generation(2));
        QCOMPARE(str(tok->encode("Hello world", true, false)), QString("0 35378 8999"));  // no EOS

        const std::string specials = "<s> </s> <unk> <mask> not parsed";
        QCOMPARE(str(tok->encode(specials, false, true)), QString("0 2 3 250001 959 366 5281"));
        QCOMPARE(str(tok->encode(specials, false, false)),
                 QString("4426 7 2740 6 42946 7 2740 4426 3678 2740 4426 1510 92 2740 959 366 5281"));

        // A byte that starts no character is U+FFFD, left as it is: the unknown token.
        const Ids invalid = tok->encode("a\xff" "b \xe4\xb8 x\xc3", false, false);
        QCOMPARE(str(invalid), QString("10 3 275 6 3 1022 3"));
        QCOMPARE(tok->decode(invalid), std::string(" a<unk>b <unk> x<unk>"));

        // Decoding gives the normalized text, spaces for "▁".
        const std::pair<std::string, std::string> decoded[] = {
            {"\uFF28\uFF45\uFF4C\uFF4C\uFF4F\u3000\uFF37\uFF4F\uFF52\uFF4C\uFF44\uFF01 \uFF11\uFF12\uFF13",
             " Hello World! 123"},
            {"\uFB01nance \uFB02ow \uFB00 \uFB03x \uFB06", " finance flow ff ffix st"},
            {"   leading and trailing   ", " leading and trailing"},
            {"e\u0301 A\u030A n\u0303o \u212B \u00C5", " \u00E9 \u00C5 \u00F1o \u00C5 \u00C5"},
        };
        for (const auto& [text, expected] : decoded) {
            const Ids ids = tok->encode(text, false, false);
            QCOMPARE(tok->decode(ids), expected);
            QCOMPARE(stream_decode(*tok, ids), expected);
        }
    }

    // The synthetic RWKV vocabulary: every input decodes to itself (as llama.cpp's pieces
    // do), escaped texts stand for their bytes, and no BOS is ever added.
    void rwkvFixture() {
        const auto file = arbor::GgufFile::open(fixture("ggml-vocab-rwkv-synthetic.gguf"));
        const auto tok = arbor::Tokenizer::from_gguf(*file);
        QVERIFY(!tok->adds_bos());
        QCOMPARE(tok->bos(), 0);
        QCOMPARE(str(tok->encode("Hello", true, true)), str(tok->encode("Hello", false, false)));

        std::ifstream in(fixture("ggml-vocab-rwkv-synthetic.gguf.inp"), std::ios::binary);
        std::ostringstream raw;
        raw << in.rdbuf();
        const std::string inputs = raw.str(), sep = "\n__ggml_vocab_test__\n";
        int checked = 0;
        for (size_t pos = 0, next; (next = inputs.find(sep, pos)) != std::string::npos; pos = next + sep.size()) {
            const std::string text = inputs.substr(pos, next - pos);
            const Ids ids = tok->encode(text, false, false);
            QCOMPARE(tok->decode(ids), text);
            QCOMPARE(stream_decode(*tok, ids), text);
            ++checked;
        }
        QCOMPARE(checked, 52);

        const auto bytes_of = [&](const char* escaped) { return tok->token_bytes(*tok->find(escaped)); };
        QCOMPARE(bytes_of("\\\\"), std::string("\\"));
        QCOMPARE(bytes_of("\\\\n"), std::string("\\n"));
        QCOMPARE(bytes_of("\\r\\n"), std::string("\r\n"));
        QCOMPARE(bytes_of("\\xe4\\xb8"), std::string("\xe4\xb8"));  // part of a character
        QCOMPARE(bytes_of("it's"), std::string("it's"));
        QCOMPARE(bytes_of("'quoted'"), std::string("'quoted'"));  // in Python's double quotes: as is
        QCOMPARE(bytes_of("\\'\""), std::string("'\""));           // both kinds of quote: \' escaped
        QCOMPARE(tok->token_bytes(0), std::string("<s>"));
        // Control text in the input is matched as text unless special tokens are parsed;
        // then it is split out first and "x" is a token of its own.
        QCOMPARE(str(tok->encode("<s>x", false, false)), QString::number(*tok->find("<s>x")));
        QCOMPARE(str(tok->encode("<s>x", false, true)), "0 " + QString::number(*tok->find("x")));
    }

    // A vocabulary that lacks bytes (the converter's never do): such a byte is the unknown
    // token when the file names one, else dropped; so is a byte that only starts longer
    // tokens (llama.cpp would emit an invalid id, or start over from the text's start).
    void rwkvMissingBytes() {
        const auto vocabulary = [&](bool with_unknown) {
            GgufWriter w;
            w.add("general.architecture", gv::str("rwkv6"));
            w.add("tokenizer.ggml.model", gv::str("rwkv"));
            w.add("tokenizer.ggml.tokens",
                  gv::arr(arbor::GgufType::String, {gv::str("<s>"), gv::str("ab"), gv::str("b"), gv::str("?")}));
            if (with_unknown) w.add("tokenizer.ggml.unknown_token_id", gv::u32(3));
            return load(w);
        };
        const auto with_unknown = vocabulary(true);
        QCOMPARE(str(with_unknown->encode("abzab", false, false)), QString("1 3 1"));
        QCOMPARE(str(with_unknown->encode("aab", false, false)), QString("3 1"));
        const auto without = vocabulary(false);
        QCOMPARE(str(without->encode("abzab", false, false)), QString("1 1"));
        QCOMPARE(str(without->encode("aab", false, false)), QString("1"));
    }

    void malformedUnigram_data() {
        QTest::addColumn<std::function<void(GgufWriter&)>>("change");
        QTest::addColumn<QString>("message");
        const auto set_charsmap = [](arbor::GgufValue v) {
            return std::function<void(GgufWriter&)>(
                [v](GgufWriter& w) { w.add("tokenizer.ggml.precompiled_charsmap", v); });
        };
        QTest::newRow("charsmap of strings") << set_charsmap(gv::arr(arbor::GgufType::String, {gv::str("x")}))
                                             << "precompiled_charsmap is not an array of bytes";
        QTest::newRow("charsmap of uint32") << set_charsmap(gv::arr(arbor::GgufType::Uint32, {gv::u32(1)}))
                                            << "precompiled_charsmap is not an array of bytes";
        QTest::newRow("charsmap not an array") << set_charsmap(gv::u32(1))
                                               << "precompiled_charsmap is not an array of bytes";
        QTest::newRow("charsmap of 3 bytes") << set_charsmap(byte_array("abc")) << "shorter than its 4-byte header";
        QTest::newRow("trie longer than the charsmap")
            << set_charsmap(byte_array(std::string("\x08\0\0\0\0\0\0\0\0\0\0\0", 12))) << "does not fit";
        QTest::newRow("path out of the trie")
            << set_charsmap(byte_array(charsmap({0}, std::string("\0", 1)))) << "a path leaves its trie";
        auto bad_offset = small_trie_nodes();
        bad_offset[201] = 0x80000000u | 5000;
        QTest::newRow("replacement out of the strings")
            << set_charsmap(byte_array(charsmap(bad_offset, std::string("b\0c\0", 4))))
            << "a replacement lies outside its strings";
        QTest::newRow("replacement without its NUL")
            << set_charsmap(byte_array(charsmap(small_trie_nodes(), std::string("b\0c", 3))))
            << "a replacement lies outside its strings or has no end";
        QTest::newRow("no tokens") << std::function<void(GgufWriter&)>([](GgufWriter& w) {
            w = GgufWriter();
            w.add("tokenizer.ggml.model", gv::str("t5"));
        }) << "missing tokenizer.ggml.tokens";
        QTest::newRow("no unknown token") << std::function<void(GgufWriter&)>([](GgufWriter& w) {
            w = unigram_writer({{"a", kNormal, -1}, {"b", kNormal, -1}});
        }) << "the unigram vocabulary has no unknown token";
        QTest::newRow("space prefix flag not a bool") << std::function<void(GgufWriter&)>([](GgufWriter& w) {
            w.add("tokenizer.ggml.add_space_prefix", gv::str("yes"));
        }) << "tokenizer.ggml.add_space_prefix";
    }

    void malformedUnigram() {
        QFETCH(std::function<void(GgufWriter&)>, change);
        QFETCH(QString, message);
        GgufWriter w = unigram_writer();
        change(w);
        const QString error = load_error(w);
        QVERIFY2(error.contains(message), qPrintable("got: '" + error + "'"));
    }

    void malformedRwkv() {
        GgufWriter w;
        w.add("tokenizer.ggml.model", gv::str("rwkv"));
        QVERIFY2(load_error(w).contains("missing tokenizer.ggml.tokens"), qPrintable(load_error(w)));
        w.add("tokenizer.ggml.tokens", gv::arr(arbor::GgufType::Uint32, {gv::u32(1)}));
        QVERIFY2(load_error(w).contains("tokenizer.ggml.tokens[0] is not a string"), qPrintable(load_error(w)));
    }

    // A charsmap may be absent (llama.cpp reads none then); the tokenizer model's name in
    // the error for those it does not know lists both.
    void charsmapOptionalAndModelList() {
        QVERIFY(load_error(unigram_writer()).isEmpty());
        const QString error = load_error(unigram_writer(kUnigramPieces, "plamo2"));
        QVERIFY2(error.contains("unsupported tokenizer model 'plamo2'") && error.contains("t5") &&
                     error.contains("rwkv"),
                 qPrintable(error));
    }
};

QTEST_APPLESS_MAIN(TestUnigramRwkv)
#include "test_unigram_rwkv.moc"
