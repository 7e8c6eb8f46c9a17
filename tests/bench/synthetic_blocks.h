// Random tensor data of every weight type, written as blocks directly (the kernels have
// no weight quantizers, and quantizing random floats would only cost time): random codes,
// with block scales set so that the values have about the asked standard deviation and,
// for the types with a minimum, zero mean.
#pragma once

#include "arbor/kernels/dtype.h"

#include <cstdint>

namespace arbor::synth {

// splitmix64: fast, and every (seed, stream) pair gives its own well-mixed sequence.
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)

private:
    uint64_t state_;
};

// A seed for one chunk of one tensor, from the file's seed.
uint64_t chunk_seed(uint64_t seed, uint64_t tensor_index, uint64_t chunk_index);

// Fills n_blocks blocks of `type` (elements for F32, F16 and BF16) at `out` with values
// of standard deviation about `sigma` around `mean`. A nonzero mean is for float types only
// (norm weights).
void fill_random_blocks(DType type, double mean, double sigma, Rng& rng, uint8_t* out, int64_t n_blocks);

} // namespace arbor::synth
