// Helper of test_store_crash: streams a reply into a Store forever, one append per piece,
// reporting each append after it returned, until the test kills it.
// Usage: store_stream_writer DB_FILE
#include "arbor/store.h"

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DB_FILE\n", argv[0]);
        return 2;
    }
    try {
        arbor::Store store(argv[1]);
        const auto c = store.create_conversation("crash test");
        const auto prompt = store.add_message(c, std::nullopt, arbor::Role::User, "prompt",
                                              std::vector<std::int32_t>{-7, 8});
        const auto reply = store.add_message(c, prompt, arbor::Role::Assistant, "", {},
                                             arbor::MessageState::streaming);
        std::printf("reply %lld\n", static_cast<long long>(reply));
        std::fflush(stdout);
        for (std::int32_t i = 0;; ++i) {
            // Piece i is "w<i> " with token id i, so a reader can tell whether text and
            // ids were written together.
            const std::vector<std::int32_t> ids{i};
            store.append_to_message(reply, "w" + std::to_string(i) + " ", ids);
            std::printf("appended %d\n", i + 1);
            std::fflush(stdout);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "store_stream_writer: %s\n", e.what());
        return 1;
    }
}
