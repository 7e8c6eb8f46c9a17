#include "fixture_vocabularies.h"

#include "arbor/paths.h"
#include "unicode.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace arbor::fuzz {

namespace {

FixtureVocabulary load(const std::filesystem::path& path) {
    FixtureVocabulary v;
    v.name = path.filename().string();
    v.file = GgufFile::open(path);
    v.byte_level = v.file->get_string("tokenizer.ggml.model").value_or("") == "gpt2";
    v.tokenizer = Tokenizer::from_gguf(*v.file);
    if (v.byte_level)
        for (int b = 0; b < 256; ++b)
            v.byte_has_token[size_t(b)] = v.tokenizer->find(tok::byte_alphabet().encode(uint8_t(b))).has_value();
    return v;
}

std::vector<FixtureVocabulary> load_all() {
    std::vector<std::filesystem::path> paths;
    for (const auto& entry : std::filesystem::directory_iterator(ARBOR_TEST_DATA_DIR "/tokenizer"))
        if (entry.path().extension() == ".gguf") paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) {
        std::fprintf(stderr, "no vocabularies in %s/tokenizer\n", ARBOR_TEST_DATA_DIR);
        std::exit(1);
    }
    const auto model = default_model_path();
    if (std::filesystem::exists(model)) paths.push_back(model);
    else std::fprintf(stderr, "note: %s is not installed; fuzzing the fixture vocabularies only\n", model.c_str());
    std::vector<FixtureVocabulary> out;
    for (const auto& p : paths) out.push_back(load(p));
    return out;
}

} // namespace

const std::vector<FixtureVocabulary>& fixture_vocabularies() {
    static const std::vector<FixtureVocabulary> all = load_all();
    return all;
}

} // namespace arbor::fuzz
