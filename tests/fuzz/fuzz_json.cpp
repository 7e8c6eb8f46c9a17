// The API's JSON parser and its request readers on arbitrary bytes: a body is either
// parsed or refused with JsonError; a parsed value serializes to text that parses back to
// the same value; the chat and completion readers either build a request or refuse the
// body with ApiError (what the server answers as 400).
#include "api/api_error.h"
#include "api/json.h"
#include "api/openai_request.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

void check(bool ok, const char* what, std::string_view text) {
    if (ok) return;
    std::fprintf(stderr, "%s\ntext: %.*s\n", what, int(text.size()), text.data());
    std::abort();
}

// The vocabulary size the completion reader checks token ids against (the default model's).
constexpr int32_t kVocab = 49152;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    arbor::api::Json value;
    try {
        value = arbor::api::Json::parse(text);
    } catch (const arbor::api::JsonError& e) {
        check(e.offset() <= size, "error offset beyond the text", text);
        return 0;
    }
    const std::string dumped = value.dump();
    try {
        const auto again = arbor::api::Json::parse(dumped);
        check(again == value, "dump() does not parse back to the same value", dumped);
        check(again.dump() == dumped, "dump() of the re-parsed value differs", dumped);
    } catch (const arbor::api::JsonError& e) {
        std::fprintf(stderr, "dump() is not valid JSON: %s\n", e.what());
        check(false, "dump() output", dumped);
    }
    try {
        (void)arbor::api::parse_chat_request(value);
    } catch (const arbor::api::ApiError&) {
    }
    try {
        (void)arbor::api::parse_completion_request(value, kVocab);
    } catch (const arbor::api::ApiError&) {
    }
    return 0;
}
