// What every backend checks of a step before running it, how many logit rows it gives, and
// the page byte access of a backend that has none (the CUDA library builds this file too).
#include "arbor/backend.h"
#include "arbor/error.h"

#include <string>

namespace arbor {

int32_t ForwardBatch::logit_rows() const {
    int32_t n = 0;
    for (const auto& s : sequences)
        n += s.logits == SequenceRows::Logits::All ? s.n_rows : (s.logits == SequenceRows::Logits::Last ? 1 : 0);
    return n;
}

void validate_batch(const ForwardBatch& batch, int32_t page_size, int32_t page_count, int32_t n_vocab) {
    int32_t expect_row = 0;
    for (const auto& s : batch.sequences) {
        if (s.first_row != expect_row || s.n_rows <= 0 || s.start_pos < 0)
            throw Error("forward batch: sequences must cover the rows in order, each with at least one row");
        expect_row += s.n_rows;
        const int64_t last_pos = int64_t(s.start_pos) + s.n_rows - 1;
        if (last_pos / page_size >= int64_t(s.block_table.size()))
            throw Error("forward batch: block table too short for position " + std::to_string(last_pos));
        for (int32_t page : s.block_table)
            if (page < 0 || page >= page_count) throw Error("forward batch: page id out of range");
    }
    if (size_t(expect_row) != batch.tokens.size()) throw Error("forward batch: rows do not match tokens");
    for (TokenId t : batch.tokens)
        if (t < 0 || t >= n_vocab) throw Error("forward batch: token id " + std::to_string(t) + " out of range");
}

void Backend::read_page(int32_t, std::span<std::byte>) const { throw Error(page_io_unsupported()); }

void Backend::write_page(int32_t, std::span<const std::byte>) { throw Error(page_io_unsupported()); }

} // namespace arbor
