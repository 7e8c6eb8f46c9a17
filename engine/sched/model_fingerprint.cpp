#include "model_fingerprint.h"

#include "arbor/gguf.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace arbor::sched {
namespace {

class Hasher {
public:
    void word(uint64_t w) {
        buf_.push_back(w);
        if (buf_.size() == 64) drain();
    }
    void bytes(const void* data, size_t n) {
        word(n);
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < n; i += 8) {
            uint64_t w = 0;
            std::memcpy(&w, p + i, std::min<size_t>(8, n - i));
            word(w);
        }
    }
    void text(const std::string& s) { bytes(s.data(), s.size()); }
    void value(const GgufValue& v) {
        word(uint64_t(v.type));
        std::visit(
            [&](const auto& x) {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, std::string>) text(x);
                else if constexpr (std::is_same_v<T, std::vector<GgufValue>>) {
                    word(x.size());
                    for (const GgufValue& e : x) value(e);
                } else if constexpr (std::is_same_v<T, double>) {
                    uint64_t bits;
                    std::memcpy(&bits, &x, sizeof bits);
                    word(bits);
                } else {
                    word(uint64_t(x));
                }
            },
            v.data);
    }
    kv::PageKey done() {
        drain();
        return key_;
    }

private:
    void drain() {
        key_ = kv::chain_key(key_, std::span<const uint64_t>(buf_));
        buf_.clear();
    }
    kv::PageKey key_{0x4152424f524d4f44ull, 0x454c464950524e54ull};
    std::vector<uint64_t> buf_;
};

// The pages a sample faulted in, released again: the CPU backend packed the matrices
// and released their pages before this runs, and the samples (three per tensor) kept
// 16 MiB of a 1B model resident beside the panels. A read faults in the 64 KiB around it
// (Linux's fault_around_bytes), so that aligned window goes, clipped to the mapping; a
// backend that reads the file in place faults what it needs in again.
void release_sample(const GgufFile& file, const uint8_t* sample, size_t n) {
    constexpr uintptr_t kWindow = 64 * 1024;
    const uintptr_t lo = std::max(uintptr_t(file.mapping_begin()), uintptr_t(sample) / kWindow * kWindow);
    const uintptr_t hi = std::min(uintptr_t(file.mapping_begin() + file.mapping_size()),
                                  (uintptr_t(sample) + n + kWindow - 1) / kWindow * kWindow);
    if (lo < hi) file.release_pages(reinterpret_cast<const uint8_t*>(lo), hi - lo);
}

} // namespace

kv::PageKey model_fingerprint(const Model& model, bool long_rope_factors) {
    const GgufFile& file = model.file();
    Hasher h;
    if (long_rope_factors) h.text("LongRoPE long factors");  // nothing for every other model: keys unchanged
    h.word(file.version());
    for (const auto& [key, value] : file.metadata()) {
        h.text(key);
        h.value(value);
    }
    constexpr size_t kSample = 4096;
    for (const GgufTensor& t : file.tensors()) {
        h.text(t.name);
        h.word(uint64_t(t.type));
        for (int64_t d : t.dims) h.word(uint64_t(d));
        h.word(t.offset);
        h.word(t.n_bytes);
        const size_t n = std::min(kSample, t.n_bytes);
        for (const uint8_t* sample : {t.data, t.data + (t.n_bytes - n) / 2, t.data + (t.n_bytes - n)}) {
            h.bytes(sample, n);
            release_sample(file, sample, n);
        }
    }
    return h.done();
}

} // namespace arbor::sched
