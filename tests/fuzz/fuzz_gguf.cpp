// GGUF reader on arbitrary bytes: a file either opens, with every tensor inside the data
// section, or is refused with arbor::Error. A file that opens goes on to the tokenizer
// reader, which must likewise build a tokenizer or refuse the vocabulary cleanly.
#include "arbor/error.h"
#include "arbor/gguf.h"
#include "arbor/tokenizer.h"

#include <spdlog/spdlog.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

// GgufFile maps a file by path: each input is written to one in-memory file, reused.
struct InputFile {
    int fd = -1;
    std::string path;
};

const InputFile& input_file() {
    static const InputFile file = [] {
        InputFile f;
        f.fd = memfd_create("arbor-fuzz-gguf", 0);
        if (f.fd < 0) {
            std::perror("memfd_create");
            std::exit(1);
        }
        f.path = "/proc/self/fd/" + std::to_string(f.fd);
        return f;
    }();
    return file;
}

const std::string& write_input(const uint8_t* data, size_t size) {
    const InputFile& f = input_file();
    if (ftruncate(f.fd, 0) != 0 || (size > 0 && pwrite(f.fd, data, size, 0) != ssize_t(size))) {
        std::perror("writing the fuzz input");
        std::abort();
    }
    return f.path;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    spdlog::set_level(spdlog::level::off);  // vocabularies with problems are logged
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = write_input(data, size);
    std::unique_ptr<arbor::GgufFile> file;
    try {
        file = arbor::GgufFile::open(path);
    } catch (const arbor::Error&) {
        return 0;
    }
    for (const auto& t : file->tensors()) {
        // A tensor's bytes lie inside the mapping: touching its ends faults otherwise.
        volatile uint8_t sink = 0;
        if (t.n_bytes > 0) sink = sink ^ t.data[0] ^ t.data[t.n_bytes - 1];
    }
    for (const auto& [key, value] : file->metadata()) {
        try {
            (void)file->get_string(key);
            (void)file->get_uint(key);
            (void)file->get_float(key);
        } catch (const arbor::Error&) {
        }
    }
    try {
        const auto tokenizer = arbor::Tokenizer::from_gguf(*file);
        const auto ids = tokenizer->encode("Hello <s> world\n\t  ümlaut 123", true, true);
        for (auto id : ids)
            if (id < 0 || id >= tokenizer->n_vocab()) std::abort();
        (void)tokenizer->decode(ids);
    } catch (const arbor::Error&) {
    }
    return 0;
}
