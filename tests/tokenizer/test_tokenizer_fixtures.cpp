// The tokenizer vectors of tests/data/tokenizer: every string of every ggml-vocab-NAME.gguf.inp must
// tokenize (no BOS, no special-token parsing) to exactly the ids on its line of .out.
// A vocabulary that another fixture's file holds but for its pre-tokenizer's name has a
// ggml-vocab-NAME.gguf.from naming that fixture instead of a copy of the file (qwen2's is
// qwen35's): the test writes the file with tokenizer.ggml.pre set to NAME.
#include "test_support.h"

#include "arbor/gguf.h"
#include "arbor/tokenizer.h"
#include "../gguf/gguf_test_writer.h"

#include <QTemporaryDir>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

fs::path fixture_dir() { return arbor::test::test_data_dir() / "tokenizer"; }

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Inputs are written as text + "\n__ggml_vocab_test__\n" each.
std::vector<std::string> read_inputs(const fs::path& path) {
    const std::string raw = read_file(path);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos < raw.size()) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            out.push_back(raw.substr(pos));
            break;
        }
        out.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    return out;
}

std::vector<std::vector<arbor::TokenId>> read_outputs(const fs::path& path) {
    std::ifstream in(path);
    std::vector<std::vector<arbor::TokenId>> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::vector<arbor::TokenId> ids;
        long long id = 0;
        while (ls >> id) ids.push_back(static_cast<arbor::TokenId>(id));
        out.push_back(std::move(ids));
    }
    return out;
}

std::string join(const std::vector<arbor::TokenId>& ids) {
    std::string s;
    for (auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

// A copy of vocabulary `source` at `out` with tokenizer.ggml.pre set to `pre` (removed
// when null).
void write_with_pre(const arbor::GgufFile& source, const char* pre, const fs::path& out) {
    arbor::test::GgufWriter w;
    for (const auto& [key, value] : source.metadata())
        if (key != "tokenizer.ggml.pre" && key != "general.alignment") w.add(key, value);
    if (pre) w.add("tokenizer.ggml.pre", arbor::test::gv::str(pre));
    arbor::test::write_file(out, w.bytes());
}

// The vocabulary file of fixture `base` (ggml-vocab-NAME.gguf): the file itself, or one
// written into `dir` from the fixture its .from names, with tokenizer.ggml.pre NAME.
fs::path fixture_vocabulary(const fs::path& base, const fs::path& dir) {
    if (fs::exists(base)) return base;
    std::string from = read_file(base.string() + ".from");
    from.erase(from.find_last_not_of(" \n") + 1);
    const std::string file = base.filename().string();
    const std::string name = file.substr(11, file.size() - 11 - 5);  // ggml-vocab-NAME.gguf
    const fs::path out = dir / file;
    write_with_pre(*arbor::GgufFile::open(fixture_dir() / ("ggml-vocab-" + from + ".gguf")), name.c_str(), out);
    return out;
}

std::vector<fs::path> fixture_inputs() {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fixture_dir(), ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("ggml-vocab-", 0) == 0 && name.size() > 9 &&
            name.compare(name.size() - 9, 9, ".gguf.inp") == 0)
            found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
}

} // namespace

class TokenizerFixtures : public QObject {
    Q_OBJECT

private slots:
    void fixturesPresent() {
        const auto inputs = fixture_inputs();
        QVERIFY2(!inputs.empty(), ("no tokenizer fixtures in " + fixture_dir().string()).c_str());
        for (const auto& inp : inputs) {
            const std::string base = inp.string().substr(0, inp.string().size() - 4);
            QVERIFY2(fs::exists(base) || fs::exists(base + ".from"), base.c_str());
            QVERIFY2(fs::exists(base + ".out"), (base + ".out").c_str());
        }
    }

    // Every fixture names a known pre-tokenizer (or is SentencePiece): no load warning. The
    // same vocabulary with the name changed or removed warns in a sentence for the user.
    void loadWarning() {
        for (const char* name : {"gpt-2", "falcon", "deepseek-llm", "llama-spm", "phi-3"}) {
            const auto file = arbor::GgufFile::open(fixture_dir() / ("ggml-vocab-" + std::string(name) + ".gguf"));
            QVERIFY2(arbor::Tokenizer::from_gguf(*file)->load_warning().empty(), name);
        }
        const auto file = arbor::GgufFile::open(fixture_dir() / "ggml-vocab-gpt-2.gguf");
        const auto with_pre = [&](const char* pre) {
            const auto path = std::filesystem::path(dir_.path().toStdString()) / "vocab.gguf";
            write_with_pre(*file, pre, path);
            const auto copy = arbor::GgufFile::open(path);
            return arbor::Tokenizer::from_gguf(*copy)->load_warning();
        };
        QCOMPARE(with_pre("gpt-2"), std::string());
        QCOMPARE(with_pre("made-up"), std::string("unknown pre-tokenizer 'made-up': using gpt2's splitting; "
                                                  "tokenization may differ from the model's"));
        QVERIFY(with_pre(nullptr).find("names no pre-tokenizer") != std::string::npos);
    }

    // gpt-oss's vocabulary (harmony) closes every message with <|end|>, its analysis
    // included: a reply ends at <|return|> or <|call|>. A vocabulary without those two
    // (Phi-3's) ends at <|end|>.
    void harmonyEndOfGeneration() {
        const auto vocabulary = [&](std::vector<std::string> extra) {
            using namespace arbor::test;
            std::vector<arbor::GgufValue> tokens{gv::str("a"), gv::str("b"), gv::str("ab"), gv::str("\u0120")};
            for (const std::string& t : extra) tokens.push_back(gv::str(t));
            GgufWriter w;
            w.add("tokenizer.ggml.model", gv::str("gpt2"));
            w.add("tokenizer.ggml.pre", gv::str("gpt-2"));
            w.add("tokenizer.ggml.tokens", gv::arr(arbor::GgufType::String, tokens));
            w.add("tokenizer.ggml.merges", gv::arr(arbor::GgufType::String, {gv::str("a b")}));
            const auto path = std::filesystem::path(dir_.path().toStdString()) / "harmony.gguf";
            write_file(path, w.bytes());
            const auto file = arbor::GgufFile::open(path);
            return arbor::Tokenizer::from_gguf(*file);
        };
        const auto harmony = vocabulary({"<|start|>", "<|end|>", "<|return|>", "<|call|>"});
        QVERIFY(!harmony->is_end_of_generation(*harmony->find("<|end|>")));
        QVERIFY(!harmony->is_end_of_generation(*harmony->find("<|start|>")));
        QVERIFY(harmony->is_end_of_generation(*harmony->find("<|return|>")));
        QVERIFY(harmony->is_end_of_generation(*harmony->find("<|call|>")));
        QVERIFY(harmony->is_special(*harmony->find("<|end|>")));  // still one token in a prompt
        const auto phi3 = vocabulary({"<|user|>", "<|end|>"});
        QVERIFY(phi3->is_end_of_generation(*phi3->find("<|end|>")));
    }

    // SentencePiece-style BPE (Gemma 4's model "gemma4"; pre-tokenizer sarvam-moe): spaces
    // are U+2581 before merging, merges run on characters, a character without a piece
    // becomes its <0xXX> tokens, and decoding gives the text back. Gemma 4 alone keeps a
    // word of newlines that is a token whole (the merges would split it) and always adds
    // BOS.
    void sentencePieceStyleBpe() {
        using namespace arbor::test;
        const std::string space = "\u2581";
        const auto vocabulary = [&](const char* model, const char* pre) {
            std::vector<std::string> texts{"<pad>", "<eos>", "<bos>", "<unk>", "\n", "\n\n", "\n\n\n",
                                           "a", "b", space, space + "a", "<0xC3>", "<0xA9>"};
            std::vector<arbor::GgufValue> tokens, types;
            for (size_t i = 0; i < texts.size(); ++i) {
                tokens.push_back(gv::str(texts[i]));
                types.push_back(gv::i32(i < 3 ? 3 : i == 3 ? 2 : texts[i].rfind("<0x", 0) == 0 ? 6 : 1));
            }
            GgufWriter w;
            w.add("tokenizer.ggml.model", gv::str(model));
            if (pre) w.add("tokenizer.ggml.pre", gv::str(pre));
            w.add("tokenizer.ggml.tokens", gv::arr(arbor::GgufType::String, tokens));
            w.add("tokenizer.ggml.token_type", gv::arr(arbor::GgufType::Int32, types));
            w.add("tokenizer.ggml.merges", gv::arr(arbor::GgufType::String, {gv::str("\n \n"), gv::str(space + " a")}));
            w.add("tokenizer.ggml.bos_token_id", gv::u32(2));
            w.add("tokenizer.ggml.add_bos_token", gv::boolean(false));
            const auto path = std::filesystem::path(dir_.path().toStdString()) / (std::string(model) + ".gguf");
            write_file(path, w.bytes());
            return arbor::Tokenizer::from_gguf(*arbor::GgufFile::open(path));
        };
        const auto gemma4 = vocabulary("gemma4", nullptr);
        const auto sarvam = vocabulary("gpt2", "sarvam-moe");
        QVERIFY(gemma4->load_warning().empty() && sarvam->load_warning().empty());
        const std::string text = " ab \u00e9\n\n\n";
        // "▁a" "b" "▁" then é's two bytes, then the newlines: whole, or merged pairwise.
        QCOMPARE(join(gemma4->encode(text, false, false)), std::string("10 8 9 11 12 6"));
        QCOMPARE(join(sarvam->encode(text, false, false)), std::string("10 8 9 11 12 5 4"));
        QCOMPARE(gemma4->decode(gemma4->encode(text, false, false)), text);
        QCOMPARE(sarvam->decode(sarvam->encode(text, false, false)), text);
        QVERIFY(gemma4->adds_bos());
        QCOMPARE(join(gemma4->encode("a", true, false)), std::string("2 7"));
        QVERIFY(!sarvam->adds_bos());
    }

    // BOS, end-of-generation and decoding on the fixture vocabularies (ids and flags read
    // from their metadata with the `gguf` Python package).
    void vocabularyProperties() {
        const auto open = [](const char* name) {
            auto file = arbor::GgufFile::open(fixture_dir() / name);
            return std::make_pair(std::move(file), arbor::Tokenizer::from_gguf(*file));
        };
        {
            const auto [file, spm] = open("ggml-vocab-llama-spm.gguf");
            QVERIFY(spm->adds_bos());
            QCOMPARE(spm->bos(), 1);
            QCOMPARE(spm->eos(), 2);
            const auto plain = spm->encode("Hello world", false, false);
            auto with_bos = plain;
            with_bos.insert(with_bos.begin(), 1);
            QCOMPARE(join(spm->encode("Hello world", true, false)), join(with_bos));
            QCOMPARE(spm->decode(plain), std::string(" Hello world"));  // the space prefix
            QVERIFY(spm->is_end_of_generation(2));
            QVERIFY(!spm->is_end_of_generation(1));

            // Characters missing from the vocabulary fall back to <0xXX> byte tokens.
            const std::string text = "llama \U0001F999 \u4E2D\u6587";
            const auto ids = spm->encode(text, false, false);
            QCOMPARE(spm->decode(ids), " " + text);
            arbor::StreamDecoder stream(*spm);
            std::string joined;
            for (auto id : ids) joined += stream.push(id);
            joined += stream.flush();
            QCOMPARE(joined, " " + text);

            // "<s>" is a control token: one id with parse_special, text otherwise.
            QCOMPARE(spm->encode("<s>hi", false, true).front(), 1);
            for (auto id : spm->encode("<s>hi", false, false)) QVERIFY(id != 1);
        }
        {
            const auto [file, gpt2] = open("ggml-vocab-gpt-2.gguf");
            QVERIFY(!gpt2->adds_bos());  // no tokenizer.ggml.add_bos_token: BPE default
            QCOMPARE(join(gpt2->encode("Hello", true, false)), join(gpt2->encode("Hello", false, false)));
            QVERIFY(gpt2->is_end_of_generation(50256));
        }
        {
            const auto [file, coder] = open("ggml-vocab-deepseek-coder.gguf");
            QVERIFY(coder->adds_bos());
            QCOMPARE(coder->encode("x", true, false).front(), 32013);
            QVERIFY(coder->is_end_of_generation(32014));
        }
        {
            const auto [file, phi3] = open("ggml-vocab-phi-3.gguf");
            QCOMPARE(phi3->eos(), 32000);
            QVERIFY(phi3->is_end_of_generation(32000));  // <|endoftext|>
            QVERIFY(phi3->is_end_of_generation(32007));  // <|end|>
            QVERIFY(!phi3->is_end_of_generation(32010)); // <|user|>
        }
    }

    void testFixture_data() {
        QTest::addColumn<QString>("input");
        for (const auto& inp : fixture_inputs()) {
            std::string name = inp.filename().string();
            name = name.substr(11, name.size() - 11 - 9);  // ggml-vocab-NAME.gguf.inp
            QTest::newRow(name.c_str()) << QString::fromStdString(inp.string());
        }
    }

    void testFixture() {
        QFETCH(QString, input);
        const std::string inp = input.toStdString();
        const std::string base = inp.substr(0, inp.size() - 4);
        const auto file = arbor::GgufFile::open(fixture_vocabulary(base, dir_.path().toStdString()));
        const auto tokenizer = arbor::Tokenizer::from_gguf(*file);
        QVERIFY(tokenizer->load_warning().empty());  // a known pre-tokenizer

        const auto texts = read_inputs(inp);
        const auto expected = read_outputs(base + ".out");
        QVERIFY(!texts.empty());
        QCOMPARE(texts.size(), expected.size());

        int failures = 0;
        std::string report;
        for (size_t i = 0; i < texts.size(); ++i) {
            const auto ids = tokenizer->encode(texts[i], false, false);
            if (ids == expected[i]) continue;
            ++failures;
            report += "\n  string " + std::to_string(i) + " '" + texts[i] + "'\n    expected: " +
                      join(expected[i]) + "\n    got:      " + join(ids);
        }
        if (failures)
            QFAIL((std::to_string(failures) + " of " + std::to_string(texts.size()) +
                   " strings differ:" + report).c_str());
    }

private:
    QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TokenizerFixtures)
#include "test_tokenizer_fixtures.moc"
